"""A missing system library of Qt's X11 plugin is named with the package to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.qt_libraries import check, explain, missing_from_ldd, os_family, xcb_plugin

ROOT = Path(__file__).resolve().parents[2]

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd4b7f2000)
\tlibQt6XcbQpa.so.6 => /x/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f0e4c000000)
\tlibxcb-cursor.so.0 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxcb.so.1 => /lib/x86_64-linux-gnu/libxcb.so.1 (0x00007f0e4bf00000)
\tlibxcb-cursor.so.0 => not found
"""


def test_the_libraries_ldd_could_not_find_are_read_once_each() -> None:
    assert missing_from_ldd(LDD) == ("libxcb-cursor.so.0", "libxcb-icccm.so.4")
    assert missing_from_ldd("\tlibc.so.6 => /lib/libc.so.6 (0x1)\n") == ()


@pytest.mark.parametrize(("release", "family", "command"), [
    ('ID=debian\nVERSION_ID="12"\n', "debian",
     "sudo apt-get install libxcb-cursor0 libxcb-icccm4"),
    ('ID=ubuntu\nID_LIKE=debian\n', "debian",
     "sudo apt-get install libxcb-cursor0 libxcb-icccm4"),
    ('ID="fedora"\n', "fedora", "sudo dnf install xcb-util-cursor xcb-util-wm"),
    ('ID=rocky\nID_LIKE="rhel centos fedora"\n', "fedora",
     "sudo dnf install xcb-util-cursor xcb-util-wm"),
    ("ID=arch\n", "arch", "sudo pacman -S xcb-util-cursor xcb-util-wm"),
])
def test_the_message_names_this_systems_packages(release: str, family: str,
                                                 command: str) -> None:
    assert os_family(release) == family
    message = explain(missing_from_ldd(LDD), os_family(release)).message()
    assert "libxcb-cursor.so.0" in message and command in message


def test_an_unknown_system_gets_every_familys_package_names() -> None:
    assert os_family("ID=gentoo\n") is None
    message = explain(("libxcb-cursor.so.0",), None).message()
    for command in ("apt-get install libxcb-cursor0", "dnf install xcb-util-cursor",
                    "pacman -S xcb-util-cursor"):
        assert command in message


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Qt's X11 plugin: Linux")
def test_on_this_machine_the_plugin_is_found_and_nothing_is_missing() -> None:
    # dev.py test installs what the plugin needs; the check must then stay quiet
    plugin = xcb_plugin()
    assert plugin is not None and plugin.name == "libqxcb.so"
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    saved = os.environ["QT_QPA_PLATFORM"]
    try:
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        found = check()
    finally:
        os.environ["QT_QPA_PLATFORM"] = saved
    ldd = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True).stdout
    assert (found is None) == ("not found" not in ldd)


def test_the_bundle_ships_the_window_icon_the_app_opens() -> None:
    from app.main import ICON

    spec = (ROOT / "packaging" / "loadout.spec").read_text()
    assert ICON.is_file() and ICON.parent.name == "assets"
    assert f'(str(ROOT / "assets" / "{ICON.name}"), "assets")' in spec
