"""GBNF elements that can match no token: refused before llama.cpp sees them.

llama.cpp parses a grammar holding an empty character class (``[z-a]``), a code point
past Unicode (``"\\UFFFFFFFF"``), NUL, a class excluding every character or a token
reference past the vocabulary, then aborts the whole process (``std::terminate``,
"Unexpected empty grammar stack") when sampling reaches it and no token is left to take.
Each such element is found here by reading its text as llama.cpp's parser reads it.
"""

from __future__ import annotations

import re

MAX_CODE_POINT = 0x10FFFF
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}  # llama.cpp's \x, \u and \U escapes
_TOKEN_ID = re.compile(r"<\[(\d+)\]>")
_NUL_WHY = "llama.cpp reads a token's text only up to a NUL, so no token matches it"


def element_matching_nothing(element: str, n_vocab: int | None) -> str | None:
    """Why a literal, character class or token reference of a GBNF grammar can never
    match (None when it can, or when llama.cpp's parser refuses it anyway).

    Args:
        element: the element's text, with its quotes, brackets or angle brackets.
        n_vocab: the vocabulary size, the bound of ``<[N]>`` (None: not checked).
    """
    token = _TOKEN_ID.fullmatch(element)
    if token is not None:
        if n_vocab is not None and int(token.group(1)) >= n_vocab:
            return (f"the token reference {element} is outside this model's vocabulary "
                    f"(0 to {n_vocab - 1})")
        return None
    if element[:1] not in ('"', "[") or len(element) < 2 or element[-1] not in '"]':
        return None  # a token by its text, or not closed: llama.cpp's parser decides
    shown = element[:40]
    body = element[1:-1]
    negated = element[0] == "[" and body.startswith("^")
    chars = _code_points(body[1:] if negated else body)
    past = next((cp for cp, _ in chars if cp > MAX_CODE_POINT), None)
    if past is not None:
        return (f"{shown} names the code point U+{past:X}, past the last Unicode character "
                "(U+10FFFF): no token can produce it")
    if element[0] != "[":
        if any(cp == 0 for cp, _ in chars):
            return f"{shown} holds NUL ({_NUL_WHY})"
        return None
    spans = _spans(chars)
    if spans is None:
        return f"a character range in {shown} ends before it starts (it is empty)"
    if negated and _covers_unicode(spans):
        return f"{shown} excludes every character a token can hold: it matches nothing"
    if not negated and spans and all(hi <= 0 for _, hi in spans):
        return f"{shown} matches NUL only ({_NUL_WHY})"
    return None


def token_references(text: str) -> list[str]:
    """The token references of a grammar that must match (``<[N]>``, ``<|im_end|>``; not
    the negated ``!<...>``), outside literals, classes and comments."""
    refs: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            i = comment_end(text, i)
        elif c in ELEMENT_CLOSE:
            end, closed = _element_span(text, i)
            if c == "<" and closed and (i == 0 or text[i - 1] != "!"):
                refs.append(text[i:end])
            i = end
        else:
            i += 1
    return refs


ELEMENT_CLOSE = {"\"": "\"", "[": "]", "<": ">"}  # what closes a literal, class, token


def comment_end(text: str, i: int) -> int:
    """The index after the comment that starts at ``i`` (``#`` to the end of its line)."""
    end = text.find("\n", i)
    return len(text) if end < 0 else end + 1


def element_end(text: str, i: int) -> int:
    """The index after the literal, class or token reference that starts at ``i`` (a
    class or token reference not closed on its line ends there: llama.cpp reports it)."""
    return _element_span(text, i)[0]


def _element_span(text: str, i: int) -> tuple[int, bool]:
    """:func:`element_end`, and whether the element was closed."""
    close = ELEMENT_CLOSE[text[i]]
    j, n = i + 1, len(text)
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == close:
            return j + 1, True
        if c == "\n" and close != "\"":
            return j, False
        j += 1
    return n, False


def _code_points(body: str) -> list[tuple[int, bool]]:
    """A literal's or a class's characters as (code point, is a bare ``-``); an escape
    llama.cpp would refuse reads as -1 (its parser reports it)."""
    out: list[tuple[int, bool]] = []
    k = 0
    while k < len(body):
        c = body[k]
        if c != "\\" or k + 1 >= len(body):
            out.append((ord(c), c == "-"))
            k += 1
            continue
        size = _HEX_DIGITS.get(body[k + 1])
        if size is None:
            out.append((ord(body[k + 1]), False))
            k += 2
            continue
        digits = body[k + 2:k + 2 + size]
        ok = len(digits) == size and all(d in "0123456789abcdefABCDEF" for d in digits)
        out.append((int(digits, 16) if ok else -1, False))
        k += 2 + size
    return out


def _spans(chars: list[tuple[int, bool]]) -> list[tuple[int, int]] | None:
    """A class's characters as ranges (``x-y`` as llama.cpp reads it); None when one
    range ends before it starts."""
    spans: list[tuple[int, int]] = []
    k = 0
    while k < len(chars):
        if k + 2 < len(chars) and chars[k + 1][1]:
            if chars[k + 2][0] < chars[k][0]:
                return None
            spans.append((chars[k][0], chars[k + 2][0]))
            k += 3
        else:
            spans.append((chars[k][0], chars[k][0]))
            k += 1
    return spans


def _covers_unicode(spans: list[tuple[int, int]]) -> bool:
    """Whether the ranges together cover U+0001 to U+10FFFF (NUL never matches)."""
    reach = 1
    for lo, hi in sorted(spans):
        if lo > reach:
            return False
        reach = max(reach, hi + 1)
    return reach > MAX_CODE_POINT
