"""Start the engine so that it ends with the app, even when the app is killed.

``python -m app.engine_child ARGS...`` asks Linux to send this process SIGTERM when its
parent (the app) dies, then replaces itself with ``python ARGS...`` (the request survives
``exec``). Without it a crashed or killed app would leave the engine holding the GPU's
memory. Elsewhere the app starts the engine directly (see :func:`wrapper_arguments`).

No Qt here: this runs in the engine's process before it becomes the engine.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PARENT_ENV = "LOADOUT_APP_PID"
PR_SET_PDEATHSIG = 1


def supported() -> bool:
    """Whether the engine can be tied to the app's life here (Linux)."""
    return sys.platform.startswith("linux")


def wrapper_arguments() -> list[str]:
    """The arguments that put this wrapper before the engine's own (none where unsupported)."""
    return ["-m", "app.engine_child"] if supported() else []


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        return  # not fatal: the engine still runs, only without this safety
    expected = os.environ.get(PARENT_ENV)
    if expected and os.getppid() != int(expected):
        sys.exit(0)  # the app died before the request was made


def main(argv: list[str]) -> None:
    """Tie this process to its parent, then become ``python argv...``."""
    if supported():
        _die_with_parent()
    os.execv(sys.executable, [sys.executable, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
