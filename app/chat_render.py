"""A conversation as Markdown for the transcript view, and an answer's speed footer.

The figures are the engine's (``timings`` of the answer), named as in docs/speed-figures.md; the app
only formats them. Each closed code block is followed by a "copy" link whose target names
the block (``copy:N``), so the view can put that block's text on the clipboard.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QCoreApplication

from app.chat_store import Message
from app.formatting import fmt_seconds, fmt_tps
from app.texts import QT_TRANSLATE_NOOP

log = logging.getLogger(__name__)

CTX = "ChatView"
COPY_SCHEME = "copy"
IMAGE_SCHEME = "loadout-image"  # an attachment's thumbnail: loadout-image:ID

_YOU = QT_TRANSLATE_NOOP("ChatView", "You")
_ASSISTANT = QT_TRANSLATE_NOOP("ChatView", "Assistant")
_COPY = QT_TRANSLATE_NOOP("ChatView", "Copy code")
_TTFT = QT_TRANSLATE_NOOP("ChatView", "TTFT {value}")
_PREFILL = QT_TRANSLATE_NOOP("ChatView", "prefill {value} t/s")
_DECODE = QT_TRANSLATE_NOOP("ChatView", "decode {value} t/s")
_E2E = QT_TRANSLATE_NOOP("ChatView", "end-to-end {value} t/s")
_TOKENS = QT_TRANSLATE_NOOP("ChatView", "{prompt} prompt tokens ({cached} cached), "
                                        "{generated} generated")
_IMAGES = QT_TRANSLATE_NOOP("ChatView", "{count} image(s) of {tokens} tokens, encoded in "
                                        "{value} (inside TTFT)")
_ACCEPT = QT_TRANSLATE_NOOP("ChatView", "acceptance {share} ({per_step} tokens per step)")
_GUARD_STOP = QT_TRANSLATE_NOOP("ChatView", "The loop guard stopped this answer: it was "
                                            "repeating itself.")
_GUARD_RETRY = QT_TRANSLATE_NOOP("ChatView", "The loop guard saw this answer repeating "
                                             "itself and retried it with penalties.")
_STOPPED = QT_TRANSLATE_NOOP("ChatView", "Stopped.")
_CUT_OFF = QT_TRANSLATE_NOOP("ChatView", "Cut off: the answer failed before it ended.")
_ERROR = QT_TRANSLATE_NOOP("ChatView", "The answer failed: {error}")


def _tr(text: str) -> str:
    return QCoreApplication.translate(CTX, text)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def speed_figures(timings: Mapping[str, Any]) -> list[str]:
    """The four speed figures (TTFT, prefill, decode, end-to-end), "—" where undefined."""
    ttft, pre, dec, e2e = (_num(timings.get(k)) for k in
                           ("ttft_s", "prefill_tps", "decode_tps", "e2e_tps"))
    return [_tr(_TTFT).format(value=fmt_seconds(ttft) if ttft is not None else "—"),
            _tr(_PREFILL).format(value=fmt_tps(pre) if pre is not None else "—"),
            _tr(_DECODE).format(value=fmt_tps(dec) if dec is not None else "—"),
            _tr(_E2E).format(value=fmt_tps(e2e) if e2e is not None else "—")]


def footer_text(timings: Mapping[str, Any]) -> str:
    """One line under an answer: the four speeds, the token counts, acceptance."""
    if not timings:
        return ""
    parts = speed_figures(timings)
    parts.append(_tr(_TOKENS).format(prompt=int(timings.get("prompt_tokens") or 0),
                                     cached=int(timings.get("cached_tokens") or 0),
                                     generated=int(timings.get("generated_tokens") or 0)))
    images = int(timings.get("images") or 0)
    if images:
        encode = _num(timings.get("image_encode_s"))
        parts.append(_tr(_IMAGES).format(
            count=images, tokens=int(timings.get("image_tokens") or 0),
            value=fmt_seconds(encode) if encode is not None else "—"))
    acceptance = _num(timings.get("acceptance"))
    if acceptance is not None:
        per_step = _num(timings.get("tokens_per_step")) or 0.0
        parts.append(_tr(_ACCEPT).format(share=f"{acceptance:.0%}", per_step=f"{per_step:.2f}"))
    return " · ".join(parts)


def guard_text(timings: Mapping[str, Any]) -> str:
    """What the loop guard did to this answer ("" when nothing)."""
    kind = timings.get("loop_guard")
    if kind == "stopped":
        return _tr(_GUARD_STOP)
    if kind == "retried":
        return _tr(_GUARD_RETRY)
    return ""


@dataclass(frozen=True)
class Rendered:
    """The transcript's Markdown and the code blocks its copy links refer to."""

    markdown: str
    code_blocks: tuple[str, ...]


def _with_copy_links(text: str, blocks: list[str], first: int) -> str:
    out: list[str] = []
    fence: str | None = None
    body: list[str] = []
    for line in text.split("\n"):
        out.append(line)
        stripped = line.strip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence, body = stripped[:3], []
        elif fence is not None and stripped.startswith(fence):
            fence = None
            blocks.append("\n".join(body))
            out.append(f"\n[{_tr(_COPY)}]({COPY_SCHEME}:{first + len(blocks) - 1})\n")
        elif fence is not None:
            body.append(line)
    return "\n".join(out)


def render(messages: Sequence[Message], error: str = "", first_block: int = 0,
           note: str = "") -> Rendered:
    """The transcript of ``messages`` (the system prompt is not shown here).

    ``first_block`` numbers the copy links after those of an earlier part of the same
    transcript (a streaming answer is rendered apart from the messages before it);
    ``note`` is a line shown after them (a question waiting for the model, say).
    """
    blocks: list[str] = []
    parts: list[str] = []
    for message in messages:
        if message.role == "system":
            continue
        who = _tr(_YOU) if message.role == "user" else _tr(_ASSISTANT)
        body = _with_copy_links(message.content, blocks, first_block) \
            if message.role == "assistant" \
            else message.content
        pictures = " ".join(f"![image]({IMAGE_SCHEME}:{i})" for i in message.images)
        if pictures:
            body = f"{pictures}\n\n{body}" if body else pictures
        parts.append(f"**{who}**\n\n{body or '…'}\n")
        if message.role == "assistant":
            notes = []
            if message.finish_reason == "cancelled":
                notes.append(_tr(_STOPPED))
            elif message.finish_reason == "error":
                notes.append(_tr(_CUT_OFF))
            guard = guard_text(message.timings)
            if guard:
                notes.append(f"⚠ {guard}")
            footer = footer_text(message.timings)
            if footer:
                notes.append(footer)
            if notes:
                parts.append("\n\n".join(f"*{n}*" for n in notes) + "\n")
        parts.append("---\n")
    if error:
        parts.append(f"**{_tr(_ERROR).format(error=error)}**\n")
    if note:
        parts.append(f"*{note}*\n")
    return Rendered("\n".join(parts), tuple(blocks))
