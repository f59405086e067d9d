"""The argument parser of the ``loadout`` command, every subcommand registered.

Apart from :mod:`loadout.cli` so that a command can build it too (``loadout`` with no
display serves the demo with the ``serve`` subcommand's own defaults).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from collections.abc import Sequence

from loadout import __version__

# Order is the order of ``loadout --help``.
COMMANDS: tuple[str, ...] = (
    "detect", "plan", "recommend", "pull", "serve", "chat", "bench", "calibrate", "worker",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand registered, or only ``only``
    (what ``loadout plan ...`` needs: the other commands' modules, a server's among them,
    are then not imported, so a command starts and fails fast)."""
    parser = argparse.ArgumentParser(
        prog="loadout",
        description=(
            "Loadout plans where every byte of a local LLM goes on your hardware, predicts "
            "its speed, runs it on llama.cpp and measures it. Without a subcommand it opens "
            "the desktop app."
        ),
    )
    parser.add_argument("--version", action="version", version=f"loadout {__version__}")
    parser.add_argument("--self-test", action="store_true",
                        help="load the demo model, answer one question, print the engine "
                             "build and devices; exit 0 on success")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only not in COMMANDS else (only,):
        if importlib.util.find_spec(f"loadout.commands.{name}") is None:
            continue  # a command this build does not have yet is simply not offered
        module = importlib.import_module(f"loadout.commands.{name}")
        module.register(sub)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), if it is one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None
