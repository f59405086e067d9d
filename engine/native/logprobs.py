"""Log-probabilities of tokens from a context's logits rows.

The numbers are of the model's own distribution: a log-softmax over the whole vocabulary
of the raw logits llama.cpp computed, before logit bias, penalties, grammar, top-k/p and
temperature (the sampler works on a copy; these rows are untouched). numpy does the work,
and only for the requests that ask: one pass for the normaliser, a partial sort for the
most likely tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.native.logits import LogitsRows
from engine.native.tokens import Vocab
from engine.requests import TokenLogprob

Floats = np.ndarray[Any, np.dtype[np.float32]]


def _log_normaliser(rows: Floats) -> Any:
    """log(sum(exp(row))) per row (along the last axis), computed stably in float64."""
    top = rows.max(axis=-1, keepdims=True)
    total = np.exp(rows - top).sum(axis=-1, dtype=np.float64, keepdims=True)
    return top.astype(np.float64) + np.log(total)


def _top_ids(rows: Floats, n: int) -> Any:
    """The ids of the ``n`` largest logits per row, largest first."""
    n = min(n, rows.shape[-1])
    if rows.shape[0] == 1 and rows.shape[-1] > _SAMPLE_STRIDE * 64:
        return _top_ids_of_row(rows[0], n)[None, :]
    part = np.argpartition(rows, -n, axis=-1)[..., -n:]
    order = np.argsort(-np.take_along_axis(rows, part, axis=-1), axis=-1, kind="stable")
    return np.take_along_axis(part, order, axis=-1)


_SAMPLE_STRIDE = 16


def _top_ids_of_row(row: Floats, n: int) -> Any:
    """:func:`_top_ids` of one row, several times faster than a partition of it all: the
    n-th largest of every 16th logit is a bound the row's n largest all reach, so only the
    few logits above it are sorted."""
    sample = row[::_SAMPLE_STRIDE]
    k = min(n, sample.shape[0])
    bound = np.partition(sample, -k)[-k]
    candidates = np.flatnonzero(row >= bound)
    values = row[candidates]
    order = np.argsort(-values, kind="stable")[:n]
    return candidates[order]


class Scorer:
    """Turns logits rows into :class:`TokenLogprob` values (engine thread only)."""

    def __init__(self, vocab: Vocab, n_vocab: int) -> None:
        self._vocab = vocab
        self._rows = LogitsRows(n_vocab)

    def token(self, ctx: Any, index: int, token: int, n_top: int) -> TokenLogprob | None:
        """``token``'s log-probability at batch ``index``, with the ``n_top`` most likely
        tokens there; None when llama.cpp holds no logits at ``index``."""
        row = self._rows.row(ctx, index)
        if row is None:
            return None
        return self._entries(row[None, :], [token], n_top)[0]

    def tokens(self, ctx: Any, first: int, tokens: Sequence[int],
               n_top: int) -> list[TokenLogprob] | None:
        """Each ``tokens[i]`` scored by the logits at batch index ``first + i`` (the
        position before it); None when a row is missing."""
        if not tokens:
            return []
        rows = self._rows.rows(ctx, first, len(tokens))
        if rows is None:
            return None
        return self._entries(rows, tokens, n_top)

    def unscored(self, token: int) -> TokenLogprob:
        """A token that nothing predicts (the first of a prompt)."""
        return TokenLogprob(token, self._vocab.shown(token), None)

    def _entries(self, rows: Floats, tokens: Sequence[int], n_top: int) -> list[TokenLogprob]:
        norm = _log_normaliser(rows)
        ids = np.asarray(tokens, dtype=np.intp)
        own = (np.take_along_axis(rows, ids[:, None], axis=-1) - norm)[:, 0].tolist()
        shown = self._vocab.shown
        if n_top <= 0:
            return [TokenLogprob(t, shown(t), lp) for t, lp in zip(tokens, own, strict=True)]
        top = _top_ids(rows, n_top)
        top_lps = (np.take_along_axis(rows, top, axis=-1) - norm).tolist()
        return [TokenLogprob(t, shown(t), lp,
                             tuple((i, shown(i), v) for i, v in zip(ids_, lps, strict=True)))
                for t, lp, ids_, lps in zip(tokens, own, top.tolist(), top_lps, strict=True)]
