"""The engine's decode t/s of all requests (:class:`engine.metrics.DecodeRate`): one
definition, fed by each request's timer, read at explicit instants here."""

from __future__ import annotations

import pytest

from engine.metrics import DecodeRate, RequestTimer


def _stream(rate: DecodeRate, start: float, tokens: int, step: float) -> float:
    """One request: its first token at ``start``, then one token every ``step``; returns
    the instant of its last token."""
    rate.decoded(0, start, first=True)
    for i in range(1, tokens):
        rate.decoded(1, start + i * step)
    return start + (tokens - 1) * step


def test_one_request_reads_as_its_own_decode_speed() -> None:
    rate = DecodeRate(window_s=4.0)
    last = _stream(rate, 10.0, 21, 0.05)  # 20 tokens after the first in one second
    assert rate.tokens_per_second(last) == pytest.approx(20.0)


def test_two_requests_at_once_add_up() -> None:
    rate = DecodeRate(window_s=4.0)
    for i in range(1, 21):  # two slots, each a token every 0.05 s after its first
        if i == 1:
            rate.decoded(0, 10.0, first=True)
            rate.decoded(0, 10.0, first=True)
        rate.decoded(1, 10.0 + i * 0.05)
        rate.decoded(1, 10.0 + i * 0.05)
    assert rate.tokens_per_second(11.0) == pytest.approx(40.0)


def test_only_the_last_window_counts_and_an_idle_engine_reads_zero() -> None:
    rate = DecodeRate(window_s=2.0)
    rate.decoded(0, 0.0, first=True)
    for i in range(1, 101):  # 10 t/s for ten seconds ...
        rate.decoded(1, i * 0.1)
    for i in range(1, 11):  # ... then 20 t/s for one second
        rate.decoded(2, 10.0 + i * 0.1)
    # the last two seconds: 10 tokens in the first, 20 in the second
    assert rate.tokens_per_second(11.0) == pytest.approx(15.0)
    assert rate.tokens_per_second(13.5) == 0.0


def test_a_new_run_after_a_pause_starts_its_window_at_its_first_token() -> None:
    rate = DecodeRate(window_s=2.0)
    _stream(rate, 0.0, 11, 0.1)
    last = _stream(rate, 30.0, 6, 0.1)  # five tokens in half a second, long after
    assert rate.tokens_per_second(last) == pytest.approx(10.0)


def test_the_request_timer_feeds_its_tokens_after_the_first() -> None:
    rate = DecodeRate(window_s=60.0)
    timer = RequestTimer(rate=rate)
    timer.token()  # the first token ends the prefill: not a decoded one
    assert timer.first_token is not None
    assert rate.tokens_per_second(timer.first_token + 1.0) == 0.0
    for _ in range(9):
        timer.token()
    timer.token(3)  # a step that kept two drafts
    now = timer.first_token + 30.0
    assert rate.tokens_per_second(now) == pytest.approx(12 / (now - timer.first_token))
    # the request's own decode t/s counts the same tokens
    m = timer.snapshot()
    assert m.generated_tokens - 1 == 12 and m.decode_tps is not None


def test_a_long_run_nobody_reads_keeps_only_its_window() -> None:
    rate = DecodeRate(window_s=1.0)
    rate.decoded(0, 0.0, first=True)
    for i in range(1, 10_001):  # 100 t/s for 100 s, and no status read in between
        rate.decoded(1, i * 0.01)
    assert len(rate._events) == 100
    assert rate.tokens_per_second(100.0) == pytest.approx(100.0)
