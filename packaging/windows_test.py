#!/usr/bin/env python3
"""Install the Windows installer under wine into a clean prefix, run it, uninstall it.

    python3 packaging/windows_test.py dist/Loadout-0.1.0-setup.exe [--keep]

(``python3 packaging/build.py --target windows`` runs it after building.) Steps, each
checked:

1. a fresh wine prefix (a temporary folder), set up as a test rig only: Windows 10, the
   null graphics driver, the ``ProcessPrng`` shim, ``QT_QPA_PLATFORM=offscreen`` in its
   registry (see ``wine.py``);
2. a silent all-users install (``/VERYSILENT /ALLUSERS``): the program files, the
   Start-menu entries and the uninstaller are where Windows keeps them;
3. the installed ``loadout-cli.exe --self-test`` (output read through a pipe): exit 0 and
   ``self-test passed``;
4. the installed ``loadout-cli.exe detect --json``: exit 0 and the inventory;
5. the installed ``Loadout.exe`` started offscreen for the first time
   (:func:`first_start`): it starts its engine on the bundled demo model, which reports
   itself loaded; killing the app ends the engine too;
6. the silent uninstall: the program folder, the Start-menu entries and the uninstall key
   are gone.

Prints one JSON record; exit 0 only when every step passed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from wine import Wine, windows_path  # noqa: E402

APP_DIR = "Program Files/Loadout"
APP_DIR_WIN = r"C:\Program Files\Loadout"
START_MENU = "ProgramData/Microsoft/Windows/Start Menu/Programs/Loadout"
UNINSTALL_KEY = (r"HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall"
                 r"\{6B8F4C1E-6E52-4C5B-9A3C-6F1D2A7E9B40}_is1")
SILENT = ["/VERYSILENT", "/SUPPRESSMSGBOXES", "/NORESTART"]


@dataclass
class Report:
    """What each step found; ``passed`` only when every check held."""

    steps: dict[str, dict[str, object]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str) -> bool:
        if not ok:
            self.failures.append(what)
            print(f"FAILED: {what}", flush=True)
        return ok

    @property
    def passed(self) -> bool:
        return not self.failures


def prepare(wine: Wine) -> None:
    """A clean prefix set up as the test rig (nothing of this goes into the product)."""
    wine.init()
    wine.use_null_display()
    wine.add_processprng_shim()
    wine.set_environment({"QT_QPA_PLATFORM": "offscreen"})


def install(wine: Wine, setup: Path, report: Report) -> None:
    """Silent all-users install (a per-user one fails under wine: ``{autopf}``)."""
    started = time.monotonic()
    proc = wine.run([windows_path(setup), *SILENT, "/ALLUSERS",
                     r"/LOG=C:\loadout-install.log"], timeout=1200)
    wine.wait()
    app = wine.drive_c / APP_DIR
    report.steps["install"] = {"exit": proc.returncode,
                               "s": round(time.monotonic() - started, 1),
                               "files": sum(1 for p in app.rglob("*") if p.is_file())}
    report.check(proc.returncode == 0, f"the installer exited {proc.returncode}")
    for name in ("loadout-cli.exe", "Loadout.exe", "unins000.exe",
                 "_internal/engines/cpu/engine.json"):
        report.check((app / name).is_file(), f"{APP_DIR}/{name} installed")
    for name in ("Loadout.lnk", "Loadout self-test.lnk", "Uninstall Loadout.lnk"):
        report.check((wine.drive_c / START_MENU / name).is_file(), f"Start menu {name}")
    query = wine.run(["reg", "query", UNINSTALL_KEY, "/reg:64"], timeout=120)
    report.check(query.returncode == 0, "the uninstall entry in the registry")


def self_test(wine: Wine, report: Report) -> str:
    """The installed ``loadout-cli.exe --self-test``; returns its output."""
    started = time.monotonic()
    proc = wine.run([APP_DIR_WIN + r"\loadout-cli.exe", "--self-test"], timeout=900)
    wall = round(time.monotonic() - started, 1)
    output = proc.stdout
    report.steps["self_test"] = {"exit": proc.returncode, "s": wall, "stdout": output,
                                 "stderr_tail": proc.stderr[-3000:]}
    report.check(proc.returncode == 0, f"--self-test exited {proc.returncode}")
    report.check("self-test passed" in output, "--self-test printed 'self-test passed'")
    report.check("Paris" in output, "the demo model answered (Paris)")
    return output


def detect(wine: Wine, report: Report) -> None:
    """The installed ``loadout-cli.exe detect --json``: this machine's inventory."""
    started = time.monotonic()
    proc = wine.run([APP_DIR_WIN + r"\loadout-cli.exe", "detect", "--json"], timeout=900)
    try:
        inventory = json.loads(proc.stdout)
    except ValueError:
        inventory = {}
    report.steps["detect"] = {"exit": proc.returncode, "s": round(time.monotonic() - started, 1),
                              "host": inventory.get("host"), "disks": inventory.get("disks"),
                              "stderr_tail": proc.stderr[-2000:]}
    report.check(proc.returncode == 0, f"detect exited {proc.returncode}")
    report.check(inventory.get("schema") == "loadout.inventory/1",
                 "detect printed the inventory JSON")


def _engine_health(port: int) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as reply:
            return dict(json.loads(reply.read()))
    except (OSError, ValueError):
        return None


def _wait(condition: Callable[[], object], timeout_s: float) -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(1)
    return None


def _linux_pids(wine: Wine, command_line: str) -> list[int]:
    """The Linux processes of ``wine``'s prefix whose Windows command line is exactly
    ``command_line`` (wine runs each Windows process as one Linux process)."""
    found = []
    marker = f"WINEPREFIX={wine.prefix}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].decode(errors="replace") == command_line and len(argv) == 1 \
                and marker in environ:
            found.append(int(entry.name))
    return found


def first_start(wine: Wine, report: Report) -> None:
    """The installed ``Loadout.exe`` opened offscreen for the first time (Journey 1's
    start, without the typing: nothing outside can give an offscreen Qt window input).

    Checked: the app starts its engine on the bundled demo model at once; the engine
    answers ``/health`` as loaded; when the app is killed, its engine ends too (no
    orphan keeps the model's memory).
    """
    started = time.monotonic()
    home = Path(tempfile.mkdtemp(prefix="loadout-wine-home-"))
    log = home / "logs" / "loadout.log"
    app = subprocess.Popen(["wine", APP_DIR_WIN + r"\Loadout.exe"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL,
                           env=wine.env({"LOADOUT_HOME": windows_path(home)}))
    try:
        line = _wait(lambda: next((ln for ln in (log.read_text(errors="replace").splitlines()
                                                 if log.is_file() else [])
                                   if "starting the engine:" in ln), ""), 180)
        port = re.search(r"--port (\d+)", str(line or ""))
        health = None
        if port:
            number = int(port.group(1))
            health = _wait(lambda: (_engine_health(number) or {}).get("status") == "ok"
                           and _engine_health(number), 300)
        step: dict[str, object] = {"engine_command": str(line or "").split(": ", 1)[-1],
                                   "health": health, "ready_s":
                                   round(time.monotonic() - started, 1)}
        report.steps["first_start"] = step
        if report.check(bool(line), "the app started its engine at once") and port:
            report.check("_internal\\models\\SmolLM2" in str(line),
                         "the engine serves the bundled demo model")
            report.check(bool(health), f"the engine answered /health as loaded: {health}")
        # wine's taskkill /F does not end it; the Linux process wine runs it in, killed,
        # ends as a Windows process ended by TerminateProcess (or a crash) does
        gui = _linux_pids(wine, APP_DIR_WIN + r"\Loadout.exe")
        for pid in gui:
            os.kill(pid, signal.SIGKILL)
        app_gone = _wait(lambda: app.poll() is not None, 30)
        step["app_gone_after_kill"] = bool(app_gone)
        if report.check(bool(gui) and bool(app_gone), "the app was killed") and port:
            gone = _wait(lambda: _engine_health(int(port.group(1))) is None, 60)
            step["engine_gone_after_app_killed"] = bool(gone)
            report.check(bool(gone), "the engine ended with the app (no orphan)")
    finally:
        # whatever is left (an orphaned engine) is ended, so that the uninstall is tested
        # on its own; the orphan was reported above
        wine.kill()
        app.kill()
        app.wait(30)
        shutil.rmtree(home, ignore_errors=True)


def uninstall(wine: Wine, report: Report) -> None:
    """Silent uninstall; the program folder, shortcuts and uninstall key must be gone."""
    started = time.monotonic()
    proc = wine.run([APP_DIR_WIN + r"\unins000.exe", *SILENT], timeout=900)
    report.check(wine.wait(600), "the uninstaller ended within 10 minutes")
    app = wine.drive_c / APP_DIR
    left = sorted(str(p.relative_to(app)) for p in app.rglob("*")) if app.exists() else []
    report.steps["uninstall"] = {"exit": proc.returncode,
                                 "s": round(time.monotonic() - started, 1), "left": left[:20]}
    report.check(proc.returncode == 0, f"the uninstaller exited {proc.returncode}")
    report.check(not app.exists(), f"{APP_DIR} removed (left: {left[:5]})")
    report.check(not (wine.drive_c / START_MENU).exists(), "Start-menu folder removed")
    query = wine.run(["reg", "query", UNINSTALL_KEY, "/reg:64"], timeout=120)
    report.check(query.returncode != 0, "the uninstall entry removed from the registry")


def run(setup: Path, keep: bool = False) -> Report:
    """Every step above in a new prefix (removed afterwards unless ``keep``)."""
    report = Report()
    prefix = Path(tempfile.mkdtemp(prefix="loadout-wine-test-"))
    wine = Wine(prefix)
    try:
        prepare(wine)
        install(wine, setup, report)
        if report.passed:
            self_test(wine, report)
            detect(wine, report)
            first_start(wine, report)
        uninstall(wine, report)
    finally:
        wine.kill()
        if keep:
            print(f"prefix kept: {prefix}", flush=True)
        else:
            shutil.rmtree(prefix, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description="Test the Windows installer under wine.")
    parser.add_argument("setup", type=Path, help="Loadout-<version>-setup.exe")
    parser.add_argument("--keep", action="store_true", help="keep the wine prefix")
    args = parser.parse_args(argv)
    report = run(args.setup.resolve(), args.keep)
    print(json.dumps({"passed": report.passed, "failures": report.failures,
                      "steps": report.steps}, indent=2), flush=True)
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
