"""Run Windows programs on Linux under wine, for building and testing the Windows installer.

A :class:`Wine` is one wine prefix (a Windows "machine": ``drive_c``, a registry). The
build uses one with the embeddable CPython in it (``windows_build.py``); the test makes a
fresh one, installs the installer there and runs what it installed (``windows_test.py``).

What wine 8.0 (Debian 12) lacks is worked around *here, in the prefix*, never in the
product (see ``packaging/README.md``, "Windows installer"):

- ``bcryptprimitives.ProcessPrng`` (Rust's random source, used by pydantic-core and
  hf-xet) does not exist: :meth:`Wine.add_processprng_shim` compiles a tiny
  ``bcryptprimitives.dll`` with mingw-w64 into the prefix's ``system32``;
- wine does not pass ``QT_*`` variables from Linux to Windows programs:
  :meth:`Wine.set_environment` writes them into the prefix's registry instead;
- a console program's standard output redirected to a file is lost: :meth:`Wine.run`
  always reads it through a pipe;
- without an X display the installer cannot create its (hidden) wizard window, even when
  silent: :meth:`Wine.use_null_display` selects wine's null graphics driver.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

log = logging.getLogger(__name__)

ENV_KEY = r"HKEY_CURRENT_USER\Environment"
# ProcessPrng fills a buffer with random bytes; RtlGenRandom (advapi32's SystemFunction036)
# is what wine has for that.
PROCESSPRNG_SOURCE = r"""
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T size) {
    while (size > 0) {
        ULONG chunk = size > 0x40000000 ? 0x40000000 : (ULONG)size;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        size -= chunk;
    }
    return TRUE;
}
"""


class WineError(RuntimeError):
    """wine is missing, or a Windows program failed where it had to succeed."""


def windows_path(path: Path | str) -> str:
    r"""The name a Windows program sees for the Linux ``path`` (wine maps ``/`` to ``Z:\``)."""
    posix = PurePosixPath(os.path.abspath(path))
    return "Z:" + str(posix).replace("/", "\\")


class Wine:
    """One 64-bit wine prefix at ``prefix`` (created on first use)."""

    def __init__(self, prefix: Path, debug: str = "-all") -> None:
        self.prefix = prefix.resolve()
        self.debug = debug

    @property
    def drive_c(self) -> Path:
        """The prefix's ``C:`` drive as a Linux folder."""
        return self.prefix / "drive_c"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The Linux environment wine runs in: this prefix, no first-run downloads."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WINE", "PYTHON"))}
        env.update(WINEPREFIX=str(self.prefix), WINEARCH="win64", WINEDEBUG=self.debug,
                   # no Gecko / Mono install prompts in a prefix that needs neither
                   WINEDLLOVERRIDES="mscoree,mshtml=")
        env.pop("DISPLAY", None)
        env.update(extra or {})
        return env

    def init(self) -> None:
        """Create the prefix (``wineboot``) unless it exists."""
        if (self.prefix / "system.reg").is_file():
            return
        if shutil.which("wine") is None:
            raise WineError("wine is not installed (apt-get install wine wine64 wine32:i386)")
        self.prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["wineboot", "--init"], env=self.env(), check=True,
                       capture_output=True, timeout=600)
        # Debian's wine 8.0 calls a new prefix Windows 7; CPython 3.11 and the installer
        # (MinVersion=10.0) want Windows 10.
        self.run(["winecfg", "-v", "win10"], check=True, timeout=300)
        self.wait()

    def run(self, program: Sequence[str], *, timeout: float = 600, check: bool = False,
            env: Mapping[str, str] | None = None, cwd: Path | None = None
            ) -> subprocess.CompletedProcess[str]:
        """Run a Windows program; its output is read through pipes (never a file)."""
        cmd = ["wine", *program]
        log.info("wine %s", " ".join(program))
        proc = subprocess.run(cmd, env=self.env(env), cwd=cwd, capture_output=True,
                              text=True, errors="replace", timeout=timeout)
        if check and proc.returncode != 0:
            raise WineError(f"{' '.join(program)} exited {proc.returncode}:\n"
                            f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
        return proc

    def wait(self, timeout: float = 600) -> bool:
        """Wait until every program of the prefix has ended (``wineserver -w``).

        Returns False (after ending them all) when some are still running after
        ``timeout`` seconds.
        """
        try:
            subprocess.run(["wineserver", "-w"], env=self.env(), check=False,
                           timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return False
        return True

    def kill(self) -> None:
        """End every program of the prefix (``wineserver -k``)."""
        subprocess.run(["wineserver", "-k"], env=self.env(), check=False, timeout=60)

    def set_environment(self, values: Mapping[str, str]) -> None:
        """Set user environment variables in the prefix's registry (``HKCU\\Environment``).

        Windows programs started in the prefix see them; wine itself drops some Linux
        variables (``QT_*``) on the way in.
        """
        for name, value in values.items():
            self.run(["reg", "add", ENV_KEY, "/v", name, "/t", "REG_SZ", "/d", value, "/f"],
                     check=True, timeout=120)
        self.wait()

    def use_null_display(self) -> None:
        """Wine's null graphics driver: windows exist, nothing is drawn, no X server is
        needed. (Without a display wine cannot create the installer's hidden wizard
        window, and even a /VERYSILENT setup fails: "Error reading
        FPreparingMemo.Lines.Strings: A call to an OS function failed".)"""
        self.run(["reg", "add", r"HKEY_CURRENT_USER\Software\Wine\Drivers", "/v",
                  "Graphics", "/t", "REG_SZ", "/d", "null", "/f"], check=True, timeout=120)
        self.wait()

    def add_processprng_shim(self, compiler: str = "x86_64-w64-mingw32-gcc-posix") -> Path:
        """Compile ``bcryptprimitives.dll`` (``ProcessPrng`` only) into ``system32``.

        Wine 8.0 has no such DLL; Windows 10 and newer do. Test rig only: the product
        never carries it.
        """
        target = self.drive_c / "windows" / "system32" / "bcryptprimitives.dll"
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "bcryptprimitives.c"
            source.write_text(PROCESSPRNG_SOURCE)
            subprocess.run([compiler, "-shared", "-O2", "-o", str(target), str(source),
                            "-ladvapi32", "-Wl,--kill-at", "-s"], check=True,
                           capture_output=True, timeout=300)
        return target
