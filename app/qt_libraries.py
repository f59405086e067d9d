"""Before the window opens on Linux: are the system libraries Qt's X11 plugin needs there?

Without them Qt aborts with "Could not load the Qt platform plugin xcb" and a list of
plugins, which says nothing about what to install. This module asks the dynamic linker
(``ldd``) which libraries of the plugin are missing and names the package that provides
each on this system (Debian/Ubuntu, Fedora/RHEL, Arch), with the command to install them.

No Qt is imported here (importing the ``PySide6`` package itself loads no plugin).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# soname -> (Debian/Ubuntu, Fedora/RHEL, Arch) package
PACKAGES: dict[str, tuple[str, str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor", "xcb-util-cursor"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon", "libxkbcommon"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm", "xcb-util-wm"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image", "xcb-util-image"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms", "xcb-util-keysyms"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil",
                                "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util", "xcb-util"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb", "libxcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb", "libxcb"),
    "libxcb-xinput.so.0": ("libxcb-xinput0", "libxcb", "libxcb"),
    "libxcb-glx.so.0": ("libxcb-glx0", "libxcb", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb", "libx11"),
    "libX11.so.6": ("libx11-6", "libX11", "libx11"),
    "libSM.so.6": ("libsm6", "libSM", "libsm"),
    "libICE.so.6": ("libice6", "libICE", "libice"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl", "libglvnd"),
    "libGL.so.1": ("libgl1", "libglvnd-glx", "libglvnd"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl", "libglvnd"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype", "freetype2"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs", "dbus"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2", "glib2"),
}
FAMILIES = ("debian", "fedora", "arch")
INSTALL = {"debian": "sudo apt-get install", "fedora": "sudo dnf install",
           "arch": "sudo pacman -S"}
_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)


@dataclass(frozen=True)
class MissingLibraries:
    """What Qt's X11 plugin lacks here, and what to install for it."""

    libraries: tuple[str, ...]
    family: str | None       # debian / fedora / arch, None when unknown
    packages: tuple[str, ...]

    def message(self) -> str:
        """What to tell the person starting the app."""
        libs = ", ".join(self.libraries)
        head = (f"loadout: the desktop app cannot open its window: Qt's X11 platform plugin "
                f"needs system libraries that are not installed ({libs}).")
        if self.family is not None:
            return f"{head}\nInstall them with:\n    {INSTALL[self.family]} " \
                   f"{' '.join(self.packages)}"
        lines = [f"{head}\nThe packages that provide them:"]
        for index, family in enumerate(FAMILIES):
            names = _unique(PACKAGES[lib][index] for lib in self.libraries if lib in PACKAGES)
            lines.append(f"    {INSTALL[family]} {' '.join(names)}")
        return "\n".join(lines)


def _unique(names: object) -> tuple[str, ...]:
    out: list[str] = []
    for name in names:  # type: ignore[attr-defined]
        if name not in out:
            out.append(name)
    return tuple(out)


def os_family(os_release: str | None = None) -> str | None:
    """``debian``, ``fedora`` or ``arch`` from ``/etc/os-release`` (None: another)."""
    if os_release is None:
        try:
            os_release = Path("/etc/os-release").read_text(encoding="utf-8")
        except OSError:
            return None
    fields: dict[str, str] = {}
    for line in os_release.splitlines():
        key, eq, value = line.partition("=")
        if eq:
            fields[key.strip()] = value.strip().strip('"').lower()
    ids = [fields.get("ID", ""), *fields.get("ID_LIKE", "").split()]
    for name in ids:
        if name in ("debian", "ubuntu", "linuxmint", "pop", "raspbian"):
            return "debian"
        if name in ("fedora", "rhel", "centos", "rocky", "almalinux"):
            return "fedora"
        if name in ("arch", "manjaro", "endeavouros"):
            return "arch"
    return None


def missing_from_ldd(ldd_output: str) -> tuple[str, ...]:
    """The libraries ``ldd`` reported as not found, in its order."""
    return _unique(_NOT_FOUND.findall(ldd_output))


def explain(missing: tuple[str, ...], family: str | None) -> MissingLibraries:
    """The packages to install for ``missing`` on ``family``."""
    if family in FAMILIES:
        index = FAMILIES.index(family)
        packages = _unique(PACKAGES[lib][index] if lib in PACKAGES else lib
                           for lib in missing)
        return MissingLibraries(missing, family, packages)
    return MissingLibraries(missing, None, ())


def xcb_plugin() -> Path | None:
    """The X11 platform plugin of the PySide6 installed (None when not found)."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for candidate in (Path(folder) / "Qt" / "plugins" / "platforms" / "libqxcb.so",
                          Path(folder) / "plugins" / "platforms" / "libqxcb.so"):
            if candidate.is_file():
                return candidate
    return None


def uses_xcb() -> bool:
    """Whether Qt will pick its X11 plugin here."""
    if not sys.platform.startswith("linux"):
        return False
    chosen = os.environ.get("QT_QPA_PLATFORM", "")
    if chosen:
        return chosen.startswith("xcb")
    return bool(os.environ.get("DISPLAY")) and not os.environ.get("WAYLAND_DISPLAY")


def check() -> MissingLibraries | None:
    """What Qt's X11 plugin lacks here (None: nothing, or it cannot be told)."""
    if not uses_xcb():
        return None
    plugin, ldd = xcb_plugin(), shutil.which("ldd")
    if plugin is None or ldd is None:
        return None
    try:
        done = subprocess.run([ldd, str(plugin)], capture_output=True, text=True,
                              timeout=20, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        log.debug("ldd %s failed: %s", plugin, exc)
        return None
    missing = missing_from_ldd(done.stdout)
    return explain(missing, os_family()) if missing else None


def main() -> int:
    """``python -m app.qt_libraries``: exit 1 with the message when something is missing."""
    found = check()
    if found is None:
        return 0
    print(found.message(), file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
