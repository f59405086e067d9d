"""Sampling, grammar, context limits, detokenization and continuous batching, on real models."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.launch import LaunchSpec
from engine.native.tokens import Detokenizer
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engine(demo_model: Path) -> Iterator[Engine]:
    eng = Engine(LaunchSpec(str(demo_model), n_threads=1, n_ctx=1024, n_seq_max=2))
    yield eng
    eng.close()


def story(**params: object) -> GenerationRequest:
    return GenerationRequest(messages=({"role": "user", "content": "Tell me a story."},),
                             params=SamplingParams(**params))  # type: ignore[arg-type]


def test_same_seed_same_text_other_seed_other_text(engine: Engine) -> None:
    a = engine.submit(story(temperature=1.0, seed=11, max_tokens=16)).result(60).text
    b = engine.submit(story(temperature=1.0, seed=11, max_tokens=16)).result(60).text
    c = engine.submit(story(temperature=1.0, seed=12, max_tokens=16)).result(60).text
    assert a == b
    assert a != c


def test_grammar_constrains_the_answer(engine: Engine) -> None:
    grammar = 'root ::= ("yes" | "no") "."'
    request = GenerationRequest(
        messages=({"role": "user", "content": "Is Paris in France?"},),
        params=SamplingParams(temperature=1.0, seed=3, max_tokens=10, grammar=grammar))
    final = engine.submit(request).result(60)
    assert final.text in ("yes.", "no.")
    assert final.finish_reason == "stop"


def test_bad_grammar_is_an_error_for_that_request_only(engine: Engine) -> None:
    final = engine.submit(story(grammar="root ::= (", max_tokens=5)).result(60)
    assert final.finish_reason == "error" and final.error
    assert engine.submit(story(temperature=0.0, max_tokens=3)).result(60).finish_reason \
        == "length"


def test_answer_stops_at_the_end_of_the_sequence(demo_model: Path) -> None:
    with Engine(LaunchSpec(str(demo_model), n_threads=1, n_ctx=256)) as eng:
        prompt = "Tell me a story about a lighthouse. " * 24  # ~200 of the 256 cells
        final = eng.submit(GenerationRequest(prompt=prompt, params=SamplingParams(
            temperature=0.0, max_tokens=500, ignore_eos=True, loop_guard="off"))).result(60)
        n_ctx_seq = eng.n_ctx_per_seq
    assert final.finish_reason == "length"
    assert final.metrics.generated_tokens < 100
    assert final.metrics.prompt_tokens + final.metrics.generated_tokens == n_ctx_seq


def test_a_new_request_joins_while_another_generates(engine: Engine) -> None:
    long = engine.submit(story(temperature=0.0, max_tokens=400, ignore_eos=True,
                               loop_guard="off"))
    stream = iter(long)
    next(stream)  # the long answer is under way
    short = engine.submit(story(temperature=0.0, max_tokens=5)).result(60)
    assert short.finish_reason == "length"
    assert not long.done  # the short one did not wait for the long one to end
    long.cancel()
    assert long.result(30).finish_reason == "cancelled"


def test_status_shows_a_generating_slot(engine: Engine) -> None:
    handle = engine.submit(story(temperature=0.0, max_tokens=300, ignore_eos=True,
                                 loop_guard="off"))
    chunks = iter(handle)
    for _ in range(20):
        next(chunks)
    # the engine refreshes the slots' snapshot a few times a second, not every token
    deadline = time.monotonic() + 5.0
    busy: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        busy = [s for s in engine.status()["slots"] if s["state"] == "generate"]
        if busy and busy[0]["generated"] >= 10:
            break
        time.sleep(0.02)
    handle.cancel()
    handle.result(30)
    assert len(busy) == 1 and busy[0]["generated"] >= 10
    assert busy[0]["decode_tps"] is not None and busy[0]["decode_tps"] > 0


def test_detokenizer_keeps_characters_split_across_tokens(engine: Engine) -> None:
    text = "naïve café, 日本語 and 🙂 emoji"
    tokens = engine.tokenize(text, add_special=False)
    assert len(tokens) > len(text.split())
    detok = Detokenizer(engine._vocab)
    pieces = [detok.feed(t) for t in tokens]
    assert "".join(pieces) + detok.flush() == text
    assert "\ufffd" not in "".join(pieces)  # no half character is ever shown
    # a character really did arrive in several tokens: some pieces were held back empty
    assert "" in pieces


def test_prompt_longer_than_the_batch_is_prefilled_in_chunks(engine: Engine,
                                                             demo_model: Path) -> None:
    request = GenerationRequest(
        messages=({"role": "system", "content": "Answer in one sentence. " * 12},
                  {"role": "user", "content": "What is the capital of France?"}),
        params=SamplingParams(temperature=0.0, max_tokens=12))
    whole = engine.submit(request).result(60)
    with Engine(LaunchSpec(str(demo_model), n_threads=1, n_ctx=1024, n_batch=32,
                           n_ubatch=32)) as small:
        chunked = small.submit(request).result(60)
    assert chunked.metrics.prompt_tokens > 2 * 32  # three chunks at least
    assert chunked.text == whole.text
