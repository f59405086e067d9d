"""What the status documents may show a client: model names, never the server's paths.

``/v1/loadout/status`` is read by the desktop app and by any client holding the key; the
engines' own status snapshots carry ``model_path`` (and a load error may quote a file), so
every status document goes through :func:`public_status` before it is sent: keys naming a
path are left out and paths inside text are cut down to the file's name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# an absolute POSIX path (/a/b/c.gguf) or a Windows one (C:\a\b.gguf, \\server\share\b)
_DIRS = re.compile(r"(?:[A-Za-z]:[\\/]|\\\\|/)(?:[^\s'\"\\/:]+[\\/])+")


def without_paths(text: str) -> str:
    """``text`` with the folders of every absolute path left out (the file name stays)."""
    return _DIRS.sub("", text)


def _is_path_key(key: Any) -> bool:
    return isinstance(key, str) and (key == "path" or key.endswith(("_path", "_dir")))


def public_status(doc: Any) -> Any:
    """A copy of a status document without path keys, and with paths cut from its text.

    Iterative over nesting of any depth is not needed: status documents are the server's
    own, a few levels deep.
    """
    if isinstance(doc, Mapping):
        return {k: public_status(v) for k, v in doc.items() if not _is_path_key(k)}
    if isinstance(doc, list | tuple):
        return [public_status(v) for v in doc]
    if isinstance(doc, str):
        return without_paths(doc)
    return doc


__all__ = ["public_status", "without_paths"]
