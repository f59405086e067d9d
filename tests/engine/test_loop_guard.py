"""The loop guard: on token sequences, and in the engine on random-weight models that loop."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from gguf import GGUFReader

from engine.launch import LaunchSpec
from engine.loop_guard import LoopGuard, LoopGuardConfig, LoopVerdict
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine


def first_verdict(tokens: list[int], config: LoopGuardConfig | None = None
                  ) -> tuple[int, LoopVerdict] | None:
    guard = LoopGuard(config)
    for i, token in enumerate(tokens):
        verdict = guard.feed(token)
        if verdict is not None:
            return i, verdict
    return None


def test_varied_output_is_never_a_loop() -> None:
    rng = random.Random(7)
    assert first_verdict([rng.randrange(5000) for _ in range(5000)]) is None


def test_a_token_repeated_hundreds_of_times_is_a_loop() -> None:
    found = first_verdict([5, 6, 7] + [9] * 400, LoopGuardConfig(min_distinct_share=0))
    assert found is not None
    index, verdict = found
    assert verdict.kind == "token" and index == 3 + 255
    # with every rule on, the nearly uniform window is caught no later
    caught = first_verdict([5, 6, 7] + [9] * 400)
    assert caught is not None and caught[0] <= index


def test_a_repeated_sentence_covering_the_window_is_a_loop() -> None:
    rng = random.Random(3)
    sentence = [rng.randrange(1000, 2000) for _ in range(23)]
    prefix = [rng.randrange(1000) for _ in range(100)]
    found = first_verdict(prefix + sentence * 20)
    assert found is not None
    index, verdict = found
    assert verdict.kind == "pattern" and verdict.period == 23
    assert index == 100 + 128 - 1  # as soon as the pattern covers half the window


def test_a_phrase_said_twice_is_not_a_loop() -> None:
    rng = random.Random(5)
    phrase = [rng.randrange(1000) for _ in range(40)]
    text = [rng.randrange(1000) for _ in range(300)]
    assert first_verdict(text + phrase + phrase + text) is None


def test_a_window_of_few_distinct_tokens_is_a_loop() -> None:
    rng = random.Random(1)
    tokens = [t for t in rng.sample(range(100), 14) for _ in range(20)]  # runs of 20
    found = first_verdict(tokens)
    assert found is not None and found[1].kind == "variety"


def test_reset_forgets_the_history() -> None:
    guard = LoopGuard(LoopGuardConfig(same_token=10))
    for _ in range(9):
        assert guard.feed(1) is None
    guard.reset()
    assert all(guard.feed(1) is None for _ in range(9))
    assert guard.feed(1) is not None


def _silence_layers(path: Path, echo: bool) -> Path:
    """Zero each layer's output projections: the next token depends on the current one only,
    so greedy decoding cycles. ``echo`` ties the output to the embeddings: a token predicts
    itself, and the model repeats one token forever."""
    reader = GGUFReader(path, "r+")
    tensors = {t.name: t for t in reader.tensors}
    for name, tensor in tensors.items():
        if name.endswith(("attn_output.weight", "ffn_down.weight")):
            tensor.data[...] = 0
    if echo:
        tensors["output.weight"].data[...] = tensors["token_embd.weight"].data
    reader.data.flush()
    return path


@pytest.fixture(scope="module")
def looping_models(synthetic_dir: Path) -> dict[str, Path]:
    from tests.helpers.gguf_factory import write_llama

    return {kind: _silence_layers(write_llama(synthetic_dir / f"loop-{kind}.gguf"),
                                  echo=kind == "echo") for kind in ("cycle", "echo")}


def run(path: Path, mode: str) -> tuple[list[str | None], object]:
    with Engine(LaunchSpec(str(path), n_threads=1, n_ctx=2048)) as eng:
        handle = eng.submit(GenerationRequest(prompt="a b c", params=SamplingParams(
            temperature=0.0, max_tokens=1000, loop_guard=mode)))
        flags = [c.loop_guard for c in handle]
        return flags, handle.result(1)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["cycle", "echo"])
def test_engine_stops_a_looping_model_with_a_distinct_reason(
        looping_models: dict[str, Path], kind: str) -> None:
    flags, final = run(looping_models[kind], "stop")
    assert final.finish_reason == "loop"  # type: ignore[attr-defined]
    assert final.loop_guard == "stopped"  # type: ignore[attr-defined]
    assert flags[-1] == "stopped" and flags.count("stopped") == 1
    assert final.metrics.generated_tokens < 300  # type: ignore[attr-defined]


@pytest.mark.slow
def test_engine_lets_the_loop_run_when_the_guard_is_off(
        looping_models: dict[str, Path]) -> None:
    flags, final = run(looping_models["cycle"], "off")
    assert final.finish_reason == "length"  # type: ignore[attr-defined]
    assert final.loop_guard is None and set(flags) == {None}  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["cycle", "echo"])
def test_engine_retries_once_with_penalties_and_says_so(
        looping_models: dict[str, Path], kind: str) -> None:
    flags, final = run(looping_models[kind], "retry")
    retried_at = flags.index("retried")
    assert retried_at < 300
    assert final.loop_guard in ("retried", "stopped")  # type: ignore[attr-defined]
    if final.finish_reason == "loop":  # type: ignore[attr-defined]
        assert final.loop_guard == "stopped"  # type: ignore[attr-defined]
        assert flags.count("stopped") == 1
    else:  # the raised penalties broke the loop: the answer ran to its length
        assert final.finish_reason == "length"  # type: ignore[attr-defined]
        assert final.metrics.generated_tokens == 1000  # type: ignore[attr-defined]
