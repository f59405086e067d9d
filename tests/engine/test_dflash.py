"""DFlash drafting: synthetic DFlash drafters beside synthetic llama targets, in real
llama.cpp."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.launch import LaunchSpec
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine
from tests.engine.test_speculative import assert_same_or_near_tie
from tests.helpers.gguf_dflash import (
    write_dflash,
    write_dflash_copy,
    write_llama_echo,
    write_llama_target,
)

pytestmark = pytest.mark.slow

PROMPT = "a b c d e f"
DRAFT_TOKENS = 4


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("dflash")
    return (write_llama_target(folder / "target.gguf"),
            write_dflash(folder / "dflash.gguf"))


@pytest.fixture(scope="module")
def echo_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("dflash")
    return (write_llama_echo(folder / "echo.gguf"),
            write_dflash_copy(folder / "dflash-copy.gguf"))


def greedy(mode: str, max_tokens: int = 40) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=max_tokens, spec_mode=mode,
                          draft_tokens=DRAFT_TOKENS, loop_guard="off", ignore_eos=True)


def engine(target: Path, drafter: Path) -> Engine:
    return Engine(LaunchSpec(str(target), n_threads=1, n_ctx=512, n_seq_max=2,
                             spec_mode="dflash", draft_model_path=str(drafter)))


def test_random_dflash_drafts_are_verified_and_keep_the_greedy_answer(
        pair: tuple[Path, Path]) -> None:
    target, drafter = pair
    with engine(target, drafter) as eng:
        assert "dflash" in eng.speculation_modes
        prompts = [PROMPT, "b c d e f g h"]
        plain = [eng.submit(GenerationRequest(prompt=p, params=greedy("off"))).result(120)
                 for p in prompts]
        handles = [eng.submit(GenerationRequest(prompt=p, params=greedy("dflash")))
                   for p in prompts]  # two slots at once
        for p, a, h in zip(prompts, plain, handles, strict=True):
            b = h.result(120)
            # rejected drafts are rolled back and drafting goes on (one block is 4)
            assert b.metrics.drafted_tokens > DRAFT_TOKENS
            assert b.metrics.accepted_tokens < b.metrics.drafted_tokens
            assert b.metrics.speculation is not None
            assert b.metrics.speculation.startswith("dflash")
            assert_same_or_near_tie(target, eng.tokenize(p), a, b)


def test_drafts_read_from_the_targets_layer_inputs_are_all_accepted(
        echo_pair: tuple[Path, Path]) -> None:
    target, drafter = echo_pair
    prompt = "ffffff"  # one token: the echo target repeats it; the drafter copies it from the
    with engine(target, drafter) as eng:  # target's layer inputs, not from its own block
        plain = eng.submit(GenerationRequest(prompt=prompt, params=greedy("off"))).result(120)
        spec = eng.submit(GenerationRequest(prompt=prompt,
                                            params=greedy("dflash"))).result(120)
        again = eng.submit(GenerationRequest(prompt=prompt,  # the cached prompt reused
                                             params=greedy("dflash"))).result(120)
    for answer in (spec, again):
        m = answer.metrics
        assert answer.token_ids == plain.token_ids
        assert m.drafted_tokens > 0 and m.accepted_tokens == m.drafted_tokens
        assert m.acceptance == pytest.approx(1.0)
        assert m.tokens_per_step is not None and m.tokens_per_step > 1.5


def test_a_model_that_is_not_a_dflash_drafter_is_refused_by_name(
        pair: tuple[Path, Path]) -> None:
    target, _ = pair
    with pytest.raises(EngineError, match="not a DFlash drafter"):
        engine(target, target)


def test_dflash_mode_needs_a_drafter_path(pair: tuple[Path, Path]) -> None:
    with pytest.raises(ValueError, match="draft_model_path"):
        LaunchSpec(str(pair[0]), spec_mode="dflash")
