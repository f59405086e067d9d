"""The ``loadout`` command: no arguments opens the GUI; a subcommand runs the CLI.

Each subcommand lives in ``loadout.commands.<name>`` with ``register(subparsers)`` and
``run(args) -> int``. ``--json`` commands print one JSON document on stdout and nothing
else there; logs go to stderr.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from loadout.parser import build_parser, command_of

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``loadout`` console script. Returns the process exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=command_of(words))
    args = parser.parse_args(words)
    from engine import engine_select, logs
    from engine.errors import EngineBuildError

    try:  # LOADOUT_ENGINE=vulkan: a build dev.py staged in the environment (not a bundle)
        engine_select.activate_requested()
    except EngineBuildError as exc:
        print(f"loadout: {exc}", file=sys.stderr)
        return 2

    logs.configure(verbose=args.verbose)
    if args.self_test:
        from loadout.commands import selftest

        return selftest.run(args)
    if args.command is None:
        from loadout.commands import gui

        return gui.run(args)
    from engine.errors import EngineError
    from planner.errors import PlannerError

    module = importlib.import_module(f"loadout.commands.{args.command}")
    try:
        return int(module.run(args))
    except (EngineError, PlannerError) as exc:
        print(f"loadout {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
