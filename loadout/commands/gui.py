"""``loadout`` without a subcommand: the desktop app, or, with no display, the demo chat."""

from __future__ import annotations

import argparse
import os
import sys


def has_display() -> bool:
    """Whether a window can be shown (offscreen Qt counts: tests and screenshots use it)."""
    if sys.platform in ("win32", "darwin"):
        return True
    if os.environ.get("QT_QPA_PLATFORM", "").startswith(("offscreen", "minimal", "vnc")):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run(args: argparse.Namespace) -> int:
    if not has_display():
        print("loadout: no display found (DISPLAY / WAYLAND_DISPLAY unset), so the desktop "
              "app cannot open; serving the demo model over the OpenAI-compatible API "
              "instead. Chat with it from another terminal: loadout chat demo, or any "
              "OpenAI client at the URL below. Ctrl-C stops it.",
              file=sys.stderr, flush=True)
        from loadout.commands import serve
        from loadout.parser import build_parser

        return serve.run(build_parser().parse_args(["serve", "demo"]))
    from app.qt_libraries import check

    missing = check()  # Qt would abort with a list of plugins, not what to install
    if missing is not None:
        print(missing.message(), file=sys.stderr, flush=True)
        return 1
    from app.main import run_app

    return run_app([sys.argv[0]])
