"""Prompts with images: the token list the scheduler sees, and the evaluation of its images.

An image becomes a run of ``n_tokens`` placeholder ids in the prompt, each the same negative
number derived from the image's hash (no real token is negative). The scheduler's prefix
reuse therefore works unchanged: a follow-up question about the same image shares the run
and reuses its KV cells, a different image does not. The scheduler calls :func:`eval_due`
when a slot's prefill reaches an image: the image is encoded and its embeddings decoded into
the slot's sequence in their own ``llama_decode`` calls, then text prefill resumes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.errors import ImageInputError
from engine.native.projector import ImageChunk, NativeProjector

if TYPE_CHECKING:
    from engine.native.context import NativeContext

log = logging.getLogger(__name__)


def placeholder_id(image_id: str) -> int:
    """The negative id every position of an image carries (same image, same id)."""
    try:
        value = int(image_id[:15], 16)
    except ValueError:
        value = abs(hash(image_id))
    return -1 - (value % (1 << 30))


@dataclass
class ImageSpan:
    """An image's place in the prompt: tokens ``start .. start + chunk.n_tokens``."""

    start: int
    chunk: ImageChunk

    @property
    def end(self) -> int:
        return self.start + self.chunk.n_tokens


@dataclass
class MediaPrompt:
    """A prompt's tokens (placeholders at the images) and where its images lie."""

    projector: NativeProjector
    tokens: list[int]
    spans: list[ImageSpan] = field(default_factory=list)

    @classmethod
    def build(cls, projector: NativeProjector, parts: Sequence[list[int] | ImageChunk],
              bos: int | None) -> MediaPrompt:
        """Join the tokenizer's parts; ``bos`` is put first unless the text starts with it.

        Raises:
            ImageInputError: the prompt ends with an image (there must be text after it
                for the answer to start from).
        """
        tokens: list[int] = []
        spans: list[ImageSpan] = []
        for part in parts:
            if isinstance(part, ImageChunk):
                spans.append(ImageSpan(len(tokens), part))
                tokens += [placeholder_id(part.image_id)] * part.n_tokens
            else:
                tokens += part
        if bos is not None and (not tokens or tokens[0] != bos):
            tokens.insert(0, bos)
            for span in spans:
                span.start += 1
        if spans and spans[-1].end >= len(tokens):
            raise ImageInputError("the prompt must not end with an image")
        return cls(projector, tokens, spans)

    @property
    def image_tokens(self) -> int:
        return sum(s.chunk.n_tokens for s in self.spans)

    def align_reuse(self, reuse: int) -> int:
        """Cached tokens that may be kept: never part of an image (back to its start)."""
        for span in self.spans:
            if span.start < reuse < span.end:
                return span.start
        return reuse

    def text_limit(self, pos: int) -> int:
        """Where the text run starting at ``pos`` ends: the next image, or the prompt end."""
        return next((s.start for s in self.spans if s.start >= pos), len(self.tokens))

    def free(self) -> None:
        """Release the preprocessed images (the prompt is done with)."""
        for span in self.spans:
            span.chunk.free()


def eval_due(ctx: NativeContext, slot: Any) -> int:
    """Evaluate the images at the slot's prefill position into its sequence.

    ``slot`` is the scheduler's slot (``seq``, ``prompt``, ``tokens``, ``n_prompt_done``,
    ``media``, ``timer``); its tokens and position move past each image decoded. Returns
    where the text run that follows ends (see :meth:`MediaPrompt.text_limit`).

    Raises:
        ImageInputError: encoding or decoding failed (the image's cells are dropped).
    """
    media: MediaPrompt = slot.media
    timer = slot.timer
    while True:
        pos = slot.n_prompt_done
        span = next((s for s in media.spans if s.start == pos), None)
        if span is None:
            return media.text_limit(pos)
        t0 = time.perf_counter()
        try:
            embd = media.projector.encode(span.chunk)
            t1 = time.perf_counter()
            media.projector.decode(ctx.ptr, span.chunk, embd, pos, slot.seq, ctx.n_batch)
        except ImageInputError:
            ctx.seq_rm(slot.seq, pos, -1)
            raise
        t2 = time.perf_counter()
        if timer is not None:
            timer.image_encode_s += t1 - t0
            timer.image_decode_s += t2 - t1
        slot.tokens.extend(slot.prompt[pos:span.end])
        slot.n_prompt_done = span.end
        log.debug("image of %d tokens into slot %d: encode %.3f s, decode %.3f s",
                  span.chunk.n_tokens, slot.seq, t1 - t0, t2 - t1)
