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
              "app cannot open; starting a terminal chat with the demo model instead.",
              file=sys.stderr, flush=True)
        from loadout.commands import chat

        chat_args = argparse.Namespace(model="demo", ctx=4096, max_tokens=512,
                                       temperature=0.7, system=None, prompt=None)
        return chat.run(chat_args)
    from app.main import run_app

    return run_app([sys.argv[0]])
