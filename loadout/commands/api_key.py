"""Where ``loadout serve`` takes its API key from, without putting it in the process list.

``--api-key KEY`` shows the key to every local user (``ps``); ``--api-key-file FILE``
(the file's first line) and the environment variable ``LOADOUT_API_KEY`` do not.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from engine.server.security import API_KEY_ENV


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--api-key`` and ``--api-key-file``."""
    p.add_argument("--api-key", default=None,
                   help="key clients must send (generated and shown once when --host is "
                        "not loopback and none is given). Visible to other local users in "
                        f"the process list: prefer --api-key-file or {API_KEY_ENV}")
    p.add_argument("--api-key-file", type=Path, default=None, metavar="FILE",
                   help="read the key from the first line of FILE (not shown in the "
                        f"process list); the environment variable {API_KEY_ENV} works too")


def api_key_of(args: argparse.Namespace) -> str | None:
    """The key: ``--api-key``, else ``--api-key-file``, else the environment (which is
    then cleared, so that no child inherits it); None when none is given.

    Raises:
        SystemExit: the key file cannot be read or is empty.
    """
    from_env = os.environ.pop(API_KEY_ENV, None) or None
    if args.api_key:
        return str(args.api_key)
    path: Path | None = args.api_key_file
    if path is not None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise SystemExit(f"loadout serve: --api-key-file {path}: cannot be read "
                             f"({type(exc).__name__})") from None
        key = lines[0].strip() if lines else ""
        if not key:
            raise SystemExit(f"loadout serve: --api-key-file {path}: the file is empty")
        return key
    return from_env
