"""Logging setup: a rotating file in the user log folder, stderr, and llama.cpp's own log.

llama.cpp writes its log through a C callback; :func:`route_native_log` installs one that
hands every line to the ``llama.cpp`` logger, so its load report (buffer sizes, devices)
lands in the same file and can be captured by tests.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import logging.handlers
import threading
from typing import Any

from engine.paths import paths

NATIVE_LOGGER = "llama.cpp"
_LEVELS = {0: logging.INFO, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING,
           4: logging.ERROR}  # ggml_log_level: NONE, DEBUG, INFO, WARN, ERROR, CONT
_native_callback: Any = None
_native_lock = threading.Lock()
_pending: list[str] = []
_pending_level = [logging.INFO]


def configure(verbose: bool = False) -> None:
    """Send logs to a rotating file (always, DEBUG) and to stderr (WARNING, or INFO if verbose).

    Idempotent: a second call only adjusts the stderr level.
    """
    root = logging.getLogger()
    root.setLevel(logging.DEBUG)
    stderr_level = logging.INFO if verbose else logging.WARNING
    for handler in root.handlers:
        if getattr(handler, "_loadout", False):
            if isinstance(handler, logging.StreamHandler) and not isinstance(
                handler, logging.FileHandler
            ):
                handler.setLevel(stderr_level)
            return_early = True
            break
    else:
        return_early = False
    if return_early:
        return
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        log_dir = paths().logs
        log_dir.mkdir(parents=True, exist_ok=True)
        file_handler = logging.handlers.RotatingFileHandler(
            log_dir / "loadout.log", maxBytes=5_000_000, backupCount=3, encoding="utf-8"
        )
        file_handler.setLevel(logging.DEBUG)
        file_handler.setFormatter(fmt)
        file_handler._loadout = True  # type: ignore[attr-defined]
        root.addHandler(file_handler)
    except OSError as exc:  # a read-only home must not stop the program
        logging.getLogger(__name__).warning("log file unavailable: %s", exc)
    stream = logging.StreamHandler()
    stream.setLevel(stderr_level)
    stream.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    stream._loadout = True  # type: ignore[attr-defined]
    root.addHandler(stream)


def _emit_native(level: int, text: str) -> None:
    # llama.cpp sends partial lines (level 5 continues the previous one); join them so each
    # logging record is one whole line.
    with _native_lock:
        if level != 5:
            _pending_level[0] = _LEVELS.get(level, logging.INFO)
        _pending.append(text)
        joined = "".join(_pending)
        if not joined.endswith("\n"):
            return
        _pending.clear()
        record_level = _pending_level[0]
    logger = logging.getLogger(NATIVE_LOGGER)
    for line in joined.splitlines():
        if line.strip():
            logger.log(record_level, "%s", line.rstrip())


def route_native_log() -> None:
    """Route llama.cpp's native log into the ``llama.cpp`` Python logger (once per process)."""
    global _native_callback
    if _native_callback is not None:
        return
    import llama_cpp

    def _callback(level: int, text: bytes, _user: ctypes.c_void_p) -> None:
        with contextlib.suppress(Exception):  # a logging failure must never unwind into C
            _emit_native(int(level), text.decode("utf-8", errors="replace"))

    _native_callback = llama_cpp.llama_log_callback(_callback)
    llama_cpp.llama_log_set(_native_callback, ctypes.c_void_p(0))


def native_log_callback() -> Any:
    """The ctypes callback that routes llama.cpp's log (other native libraries of the same
    build, e.g. the multimodal one, take it too)."""
    route_native_log()
    return _native_callback
