"""Start the engine so that it ends with the app, even when the app is killed.

``python -m app.engine_child --lifeline FD -m loadout serve ...`` runs in the engine's
process before it becomes the engine. It starts :mod:`engine.parent_watch` on the app's
lifeline pipe (read end ``FD``, inherited; the app holds the write end for its whole
life, so the pipe ends when the app does, however it ends), asks Linux to also send
SIGTERM when the parent dies, then runs ``loadout serve`` in this same process, where the
watch keeps running. Windows passes no pipe (``-m app.engine_child -m loadout ...``): the
watch waits on the app's process, named by ``LOADOUT_APP_PID``, and the app puts the
engine in a Job Object that ends with it (``app.engine_job``).

No Qt here.
"""

from __future__ import annotations

import ctypes
import io
import os
import runpy
import signal
import sys

PARENT_ENV = "LOADOUT_APP_PID"
PR_SET_PDEATHSIG = 1
LIFELINE = "--lifeline"

_lifeline: tuple[int, int] | None = None  # (read end, write end), made once per app


def supported() -> bool:
    """Whether the app's lifeline pipe is passed to the engine here (POSIX systems; on
    Windows the engine watches the app's process instead)."""
    return os.name == "posix"


def lifeline_fd() -> int:
    """The read end of the app's lifeline pipe, inherited by every engine it starts (the
    write end stays open, never inherited, until this process ends)."""
    global _lifeline
    if _lifeline is None:
        read_end, write_end = os.pipe()
        os.set_inheritable(read_end, True)
        _lifeline = (read_end, write_end)
    return _lifeline[0]


def wrapper_arguments() -> list[str]:
    """The arguments that put this wrapper before the engine's own (with the lifeline pipe
    on POSIX, without it on Windows; none elsewhere)."""
    if sys.platform == "win32":
        return ["-m", "app.engine_child"]
    if not supported():
        return []
    return ["-m", "app.engine_child", LIFELINE, str(lifeline_fd())]


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        return  # not fatal: the lifeline still ends the engine
    expected = os.environ.get(PARENT_ENV)
    if expected and os.getppid() != int(expected):
        sys.exit(0)  # the app died before the request was made


def split_lifeline(argv: list[str]) -> tuple[int | None, list[str]]:
    """``(FD, the rest)`` from ``[--lifeline FD] rest...``."""
    if len(argv) >= 2 and argv[0] == LIFELINE:
        try:
            return int(argv[1]), argv[2:]
        except ValueError:
            return None, argv[2:]
    return None, argv


def utf8_pipes() -> None:
    """Write stdout and stderr as UTF-8 when they are pipes, as the app reads them.

    Windows writes a pipe in the ANSI code page (cp1252 ...): a model path or a message
    with other characters would reach the app garbled, or fail to print at all.
    """
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", "") or "").lower().replace("-", "")
        if (isinstance(stream, io.TextIOWrapper) and encoding != "utf8"
                and not stream.isatty()):
            stream.reconfigure(encoding="utf-8", errors="replace")


def tie_to_parent(argv: list[str]) -> list[str]:
    """Tie this process to its parent (``[--lifeline FD]`` from ``argv``); the rest of argv.

    The frozen bundle's launcher calls this too, since its executable stands in for
    ``python -m app.engine_child``.
    """
    from engine.parent_watch import watch_parent

    fd, rest = split_lifeline(argv)
    utf8_pipes()
    if sys.platform.startswith("linux"):
        _die_with_parent()
    expected = os.environ.get(PARENT_ENV)
    watch_parent(fd, int(expected) if expected and expected.isdigit() else None)
    return rest


def main(argv: list[str]) -> None:
    """Tie this process to its parent, then run ``python argv...`` in it."""
    rest = tie_to_parent(argv)
    if len(rest) >= 2 and rest[0] == "-m":
        sys.argv = [rest[1], *rest[2:]]
        runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
        return
    if len(rest) >= 2 and rest[0] == "-c":  # in this process, where the watch runs
        sys.argv = ["-c", *rest[2:]]
        exec(compile(rest[1], "<string>", "exec"), {"__name__": "__main__"})
        return
    os.execv(sys.executable, [sys.executable, *rest])


if __name__ == "__main__":
    main(sys.argv[1:])
