"""Journeys through the real window: Xvfb, the ``loadout`` app as its own process with a
fresh profile, the real engine and models, driven with real X input events.

Where the X tools are missing (``dev.py test`` installs them where ``apt-get`` is at hand,
as root) every journey is reported as skipped with the reason, never passed.
Screenshots of every step go to ``build/journeys/<journey>/`` (``LOADOUT_JOURNEY_SHOTS``
to put them elsewhere). ``LOADOUT_JOURNEY_APP=/path/to/loadout`` drives that installed
executable instead of this checkout's ``python -m loadout`` (``packaging/README.md``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.journeys.harness import ROOT, App, XServer, missing_tools, processes_of


@pytest.fixture(scope="session")
def xserver() -> Iterator[XServer]:
    if not sys.platform.startswith("linux"):
        pytest.skip("journeys not run: they need an X server (Xvfb), found on Linux only")
    missing = missing_tools()
    if missing:
        pytest.skip(f"journeys not run: {', '.join(missing)} not installed (Debian/Ubuntu: "
                    "apt-get install xvfb xdotool imagemagick libxcb-cursor0; "
                    "python3 dev.py test installs them when run as root)")
    server = XServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Path:
    base = Path(os.environ.get("LOADOUT_JOURNEY_SHOTS", ROOT / "build" / "journeys"))
    folder = base / request.node.name.removeprefix("test_")
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    return folder


@pytest.fixture
def start_app(xserver: XServer, tmp_path: Path, shots: Path
              ) -> Iterator[Callable[..., App]]:
    """Start the app (a fresh profile in ``tmp_path``, or ``home``); every app started is
    closed at the end, and no engine process may be left behind."""
    started: list[App] = []
    homes: set[Path] = set()

    def start(home: Path | None = None, **env: str) -> App:
        folder = home or tmp_path / "home"
        folder.mkdir(parents=True, exist_ok=True)
        homes.add(folder)
        app = App(xserver, folder, shots, env)
        started.append(app)
        return app

    try:
        yield start
    finally:
        for app in started:
            app.close()
        for home in homes:  # the engine and every helper end with their app, in seconds
            deadline = time.monotonic() + 15
            while processes_of(home) and time.monotonic() < deadline:
                time.sleep(0.2)
            left = processes_of(home)
            for process in left:
                process.kill()
            assert not left, f"processes left behind: {[p.cmdline() for p in left]}"
