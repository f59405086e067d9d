"""Log-probabilities in OpenAI's two shapes, built from the engine's :class:`TokenLogprob`.

Chat (``ChatCompletionTokenLogprob``): ``{"content": [{"token", "logprob", "bytes",
"top_logprobs": [{"token", "logprob", "bytes", "id"}], "id"}], "refusal": null}``, where
``id`` (an extra key, as llama.cpp's server adds it) is the token id ``logit_bias`` takes.
Completions (the legacy shape): ``{"tokens", "token_logprobs", "top_logprobs":
[{token: logprob}], "text_offset"}``, where ``text_offset`` counts characters of the
returned ``text`` (which, with ``echo``, starts with the prompt). The numbers are natural
logs of the model's own distribution (see :mod:`engine.native.logprobs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from engine.requests import TokenLogprob


def _text(piece: bytes) -> str:
    return piece.decode("utf-8", "replace")


def chat_logprobs(entries: Iterable[TokenLogprob]) -> dict[str, Any]:
    """The ``logprobs`` of a chat choice (or of one streamed chunk's tokens)."""
    content = [{"id": e.token, "token": _text(e.piece), "logprob": e.logprob,
                "bytes": list(e.piece),
                "top_logprobs": [{"id": i, "token": _text(p), "logprob": lp, "bytes": list(p)}
                                 for i, p, lp in e.top]}
               for e in entries if e.logprob is not None]
    return {"content": content, "refusal": None}


class CompletionLogprobs:
    """The legacy ``logprobs`` object, built piece by piece (a stream's chunks continue
    the same ``text_offset``).

    Args:
        offset: the character offset of the first token in the returned text (the
            prompt's length without ``echo``, 0 with it).
    """

    def __init__(self, offset: int = 0) -> None:
        self.offset = offset

    def build(self, entries: Sequence[TokenLogprob]) -> dict[str, Any]:
        """The object for ``entries`` (the next tokens of the text)."""
        tokens: list[str] = []
        token_logprobs: list[float | None] = []
        tops: list[dict[str, float] | None] = []
        offsets: list[int] = []
        for e in entries:
            text = _text(e.piece)
            tokens.append(text)
            token_logprobs.append(e.logprob)
            if e.logprob is None:
                tops.append(None)
            else:
                top: dict[str, float] = {}
                for _, piece, lp in e.top:
                    top.setdefault(_text(piece), lp)  # two ids, one text: the likelier
                tops.append(top)
            offsets.append(self.offset)
            self.offset += len(text)
        return {"tokens": tokens, "token_logprobs": token_logprobs, "top_logprobs": tops,
                "text_offset": offsets}


__all__ = ["CompletionLogprobs", "chat_logprobs"]
