"""The one pass over a request body, off the event loop and within a budget.

Every route reads its JSON body through :class:`BodyChecker`: the bytes are decoded
(RFC 8259 only, :func:`engine.server.request_model.loads`) and walked once, in a worker
thread, checking together what used to be three walks on the event loop: the nesting
depth, lone surrogates (text that is not Unicode) and the number of JSON values. The walk
has two budgets, ``max_json_elements`` values and ``body_check_s`` seconds; it checks the
clock itself, so a refused body leaves no thread behind. The arrays that may be long by
design (``messages``, ``tools``, ``stop``) are bounded by their own count before anything
is walked, and every array by ``max_array_items``.

Paths are never formatted while walking (a path string per value cost more time and
memory than the body itself): each value carries a link to its parent and the path of
the one value at fault is written when an error names it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

from engine.server.errors import ApiError, bad
from engine.server.request_model import RequestLimits, loads, shown

log = logging.getLogger(__name__)

# bodies up to this size are checked at once; larger ones take turns (a few at a time),
# so that a crowd of 8 MB bodies cannot hold the memory of all of them at once
SMALL_BODY_BYTES = 256 * 1024
HEAVY_AT_ONCE = 2
_CLOCK_EVERY = 4096  # values walked between two looks at the clock
# a JSON string (with its escapes), skipped when the structure is counted from the bytes
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_FEW_STRINGS = 1 << 16  # quotes in a body below which cutting the strings out is cheap

Link = tuple[Any, str | int] | None


def path_of(link: Link) -> str:
    """The path a parent link stands for (``messages[0].content``); "" for the body."""
    parts: list[str | int] = []
    while link is not None:
        link, key = link
        parts.append(key)
    out = ""
    for key in reversed(parts):
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def _not_text(where: str) -> ApiError:
    return bad(f"'{shown(where, 80)}' holds a lone surrogate (an unpaired \\ud800-\\udfff "
               "escape), which is not Unicode text; send valid Unicode", where or None,
               "invalid_text")


def _too_many(link: Link, n: int, cap: int) -> ApiError:
    where = path_of(link)
    return bad(f"'{shown(where, 80) or 'the body'}' holds {n} items; an array or object may "
               f"hold at most {cap} (max_array_items)", where or None, "too_many_items")


def _is_text(value: str) -> bool:
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_counts(doc: Any, limits: RequestLimits) -> None:
    """The arrays a request may carry many of, counted before anything is walked.

    Raises:
        ApiError: 400 naming the field and its limit.
    """
    if not isinstance(doc, Mapping):
        return
    for name, cap in (("messages", limits.max_messages), ("tools", limits.max_tools),
                      ("stop", limits.max_stop_sequences)):
        value = doc.get(name)
        if isinstance(value, list) and len(value) > cap:
            what = {"messages": "messages", "tools": "tools", "stop": "stop sequences"}[name]
            raise bad(f"'{name}' holds {len(value)} items; at most {cap} {what} per request",
                      name, "too_many_items")


def walk(doc: Any, limits: RequestLimits, deadline: float | None = None) -> int:
    """Check a decoded body in one pass: depth, text, value count, array sizes, time.

    Returns:
        the number of JSON values in ``doc``.

    Raises:
        ApiError: 400 naming the cause (and where in the body, when one place is at fault).
    """
    max_depth, max_values = limits.max_json_depth, limits.max_json_elements
    max_items = limits.max_array_items
    stack: list[tuple[Any, int, Link]] = [(doc, 0, None)]
    count = 0
    while stack:
        node, depth, link = stack.pop()
        count += 1
        if count & (_CLOCK_EVERY - 1) == 0:
            if count > max_values:
                raise bad(f"the request body holds more than {max_values} JSON values (the "
                          "limit max_json_elements)", code="too_many_elements")
            if deadline is not None and time.monotonic() > deadline:
                raise bad(f"checking the request body took longer than "
                          f"{limits.body_check_s:g} s (the limit body_check_s); send a "
                          "smaller body", code="body_too_complex")
        kind = type(node)
        if kind is str:
            if not _is_text(node):
                raise _not_text(path_of(link))
        elif kind is dict:
            if depth >= max_depth:
                raise bad(f"the request nests deeper than {max_depth} levels",
                          code="json_too_deep")
            if len(node) > max_items:
                raise _too_many(link, len(node), max_items)
            for key, value in node.items():
                here = (link, key)
                if not _is_text(key):
                    raise _not_text(path_of(here))
                stack.append((value, depth + 1, here))
        elif kind is list:
            if depth >= max_depth:
                raise bad(f"the request nests deeper than {max_depth} levels",
                          code="json_too_deep")
            if len(node) > max_items:
                raise _too_many(link, len(node), max_items)
            stack.extend((v, depth + 1, (link, i)) for i, v in enumerate(node))
    if count > max_values:
        raise bad(f"the request body holds {count} JSON values; the limit "
                  f"(max_json_elements) is {max_values}", code="too_many_elements")
    return count


def too_many_values(raw: bytes, cap: int) -> bool:
    """Whether the bytes of a body certainly hold more than ``cap`` JSON values, told
    before decoding them (a body of millions of numbers is refused in milliseconds,
    without building millions of objects): each comma outside a string separates two
    values. Only looked at when the body has more commas than ``cap`` and few strings
    (then cutting the strings out is cheap); otherwise the walk counts."""
    if raw.count(b",") <= cap or raw.count(b'"') > _FEW_STRINGS:
        return False
    return _STRING.sub(b"", raw).count(b",") > cap


def decode_and_check(raw: bytes, limits: RequestLimits) -> Any:
    """The body's JSON, checked (blocking: run it off the event loop).

    Raises:
        ApiError: 400 ``invalid_json``, ``json_too_deep``, ``invalid_text``,
            ``too_many_items``, ``too_many_elements`` or ``body_too_complex``.
    """
    deadline = time.monotonic() + limits.body_check_s
    if not raw:
        raise bad("empty request body; send a JSON object", code="invalid_json")
    if too_many_values(raw, limits.max_json_elements):
        raise bad(f"the request body holds more than {limits.max_json_elements} JSON values "
                  "(the limit max_json_elements)", code="too_many_elements")
    try:
        doc = loads(raw)
    except RecursionError as exc:
        raise bad("the JSON nests too deeply", code="json_too_deep") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(f"malformed JSON: {exc}", code="invalid_json") from exc
    check_counts(doc, limits)
    walk(doc, limits, deadline)
    return doc


class BodyChecker:
    """Decodes and checks request bodies in worker threads; large ones a few at a time.

    Args:
        limits: the request limits (depth, values, array items, time).
        heavy_at_once: bodies over :data:`SMALL_BODY_BYTES` checked at the same time.
    """

    def __init__(self, limits: RequestLimits, heavy_at_once: int = HEAVY_AT_ONCE) -> None:
        self.limits = limits
        self._heavy_at_once = heavy_at_once
        self._heavy: asyncio.Semaphore | None = None

    async def read(self, raw: bytes) -> Any:
        """The checked JSON of ``raw``; the event loop keeps answering meanwhile.

        Raises:
            ApiError: 400 naming what is wrong with the body.
        """
        if len(raw) <= SMALL_BODY_BYTES:
            return await asyncio.to_thread(decode_and_check, raw, self.limits)
        if self._heavy is None:  # made on the loop that serves
            self._heavy = asyncio.Semaphore(self._heavy_at_once)
        async with self._heavy:
            return await asyncio.to_thread(decode_and_check, raw, self.limits)


__all__ = ["BodyChecker", "check_counts", "decode_and_check", "path_of", "too_many_values",
           "walk"]
