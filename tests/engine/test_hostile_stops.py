"""Stop strings: the incremental matcher agrees with a plain search on any text and any
stops, and requests cannot carry more or longer stops than the limits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.server.openai_schema import ServedModel, parse_completion
from engine.server.request_model import DEFAULT_REQUEST_LIMITS
from engine.stop_strings import StopMatcher
from tests.engine.hostile_cases import api_error_of

ALPHABET = st.text(alphabet="abc", max_size=6)


def _plain(pieces: list[str], stops: list[str]) -> tuple[int | None, int]:
    """(piece index, start) of the first stop to complete, by searching the whole text."""
    text = ""
    for n, piece in enumerate(pieces):
        text += piece
        starts = [text.find(s) for s in stops if s and s in text]
        if starts:
            return n, min(starts)
    return None, -1


def _held(text: str, stops: list[str]) -> int:
    return max((k for s in stops if s for k in range(len(s))
                if k and text.endswith(s[:k])), default=0)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(ALPHABET, max_size=12), st.lists(st.text(alphabet="abc", max_size=5),
                                                 max_size=4))
def test_matcher_finds_what_a_plain_search_finds(pieces: list[str], stops: list[str]) -> None:
    matcher = StopMatcher(stops)
    expected_piece, expected_start = _plain(pieces, stops)
    text = ""
    for n, piece in enumerate(pieces):
        text += piece
        hit = matcher.feed(piece)
        if hit is not None:
            assert (n, hit) == (expected_piece, expected_start)
            return
        assert matcher.held == _held(text, stops)
    assert expected_piece is None


def test_empty_stops_never_match() -> None:
    matcher = StopMatcher(["", ""])
    assert matcher.feed("anything") is None and matcher.held == 0


@pytest.mark.parametrize("stop", [
    ["x"] * (DEFAULT_REQUEST_LIMITS.max_stop_sequences + 1),
    ["y" * (DEFAULT_REQUEST_LIMITS.max_stop_chars + 1)],
    "z" * (DEFAULT_REQUEST_LIMITS.max_stop_chars + 1),
    [1], [["nested"]], {"a": 1},
])
def test_too_many_long_or_odd_stops_are_refused(stop: object) -> None:
    err = api_error_of(parse_completion, {"model": "m", "prompt": "p", "stop": stop},
                       ServedModel(id="m"))
    assert err.status == 400 and err.param == "stop"
