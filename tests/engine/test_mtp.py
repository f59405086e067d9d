"""MTP drafting with a model's own NextN head, on synthetic glm4moe GGUFs in real llama.cpp."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.launch import LaunchSpec
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine
from tests.engine.test_speculative import assert_same_or_near_tie
from tests.helpers.gguf_nextn import write_glm4moe_echo, write_glm4moe_nextn

pytestmark = pytest.mark.slow

PROMPT = "a b c d e f"


@pytest.fixture(scope="module")
def random_nextn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_glm4moe_nextn(tmp_path_factory.mktemp("mtp") / "glm4moe-nextn.gguf")


@pytest.fixture(scope="module")
def echo_nextn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_glm4moe_echo(tmp_path_factory.mktemp("mtp") / "glm4moe-echo.gguf")


def greedy(mode: str, max_tokens: int = 40) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=max_tokens, spec_mode=mode,
                          draft_tokens=3, loop_guard="off", ignore_eos=True)


@pytest.mark.parametrize("which", ["random_nextn", "echo_nextn"])
def test_mtp_drafts_verify_and_keep_the_greedy_answer(which: str,
                                                      request: pytest.FixtureRequest) -> None:
    path: Path = request.getfixturevalue(which)
    with Engine(LaunchSpec(str(path), n_threads=1, n_ctx=512, n_seq_max=2,
                           spec_mode="mtp")) as eng:
        assert "mtp" in eng.speculation_modes
        plain = eng.submit(GenerationRequest(prompt=PROMPT, params=greedy("off"))).result(120)
        mtp = eng.submit(GenerationRequest(prompt=PROMPT, params=greedy("mtp"))).result(120)
        assert mtp.metrics.drafted_tokens > 0
        assert_same_or_near_tie(path, eng.tokenize(PROMPT), plain, mtp)
    if which == "echo_nextn":  # the head predicts what the trunk does: every draft taken
        assert mtp.metrics.accepted_tokens == mtp.metrics.drafted_tokens
        # (on so tiny a model the cost switch may end drafting early: steps with drafts
        # cost more Python than they save; the steps that drafted still yielded several)
        assert mtp.metrics.tokens_per_step is not None and mtp.metrics.tokens_per_step > 1.5
    else:  # a random head: drafts refused, rolled back, the answer unchanged
        assert mtp.metrics.accepted_tokens < mtp.metrics.drafted_tokens


def test_mtp_in_two_slots_at_once(echo_nextn: Path) -> None:
    with Engine(LaunchSpec(str(echo_nextn), n_threads=1, n_ctx=512, n_seq_max=2,
                           spec_mode="mtp")) as eng:
        prompts = [PROMPT, "b c d e f g h"]
        plain = [eng.submit(GenerationRequest(prompt=p, params=greedy("off"))).result(120)
                 for p in prompts]
        handles = [eng.submit(GenerationRequest(prompt=p, params=greedy("mtp")))
                   for p in prompts]
        for p, a, h in zip(prompts, plain, handles, strict=True):
            b = h.result(120)
            assert b.metrics.accepted_tokens > 0
            assert_same_or_near_tie(echo_nextn, eng.tokenize(p), a, b)


def test_mtp_on_a_model_without_nextn_layers_is_a_clear_error(llama_gguf: Path) -> None:
    with pytest.raises(EngineError, match="no NextN"):
        Engine(LaunchSpec(str(llama_gguf), n_threads=1, n_ctx=256, spec_mode="mtp"))


def test_a_request_for_mtp_on_an_engine_without_it_says_why(random_nextn: Path) -> None:
    with Engine(LaunchSpec(str(random_nextn), n_threads=1, n_ctx=256)) as eng:
        m = eng.submit(GenerationRequest(prompt=PROMPT, params=greedy("mtp", 8))).result(60)
    assert m.metrics.drafted_tokens == 0
    assert m.metrics.speculation == "mtp off: the model was loaded without MTP"
