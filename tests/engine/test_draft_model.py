"""Speculation with a draft model: the demo model drafting for itself; a foreign vocabulary
refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.launch import LaunchSpec
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine
from tests.engine.test_speculative import REPEAT, assert_same_or_near_tie
from tests.helpers.gguf_nextn import write_llama_vocab

pytestmark = pytest.mark.slow


def greedy(mode: str, max_tokens: int = 40) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=max_tokens, spec_mode=mode,
                          draft_tokens=4, loop_guard="off")


def test_the_model_as_its_own_draft_is_accepted_and_changes_nothing(demo_model: Path) -> None:
    spec = LaunchSpec(str(demo_model), n_threads=1, n_ctx=2048, n_seq_max=2,
                      spec_mode="draft", draft_model_path=str(demo_model))
    with Engine(spec) as eng:
        assert "draft" in eng.speculation_modes
        story = "Once upon a time, in a quiet village by the sea,"
        for prompt in (REPEAT, story):
            plain = eng.submit(GenerationRequest(prompt=prompt, params=greedy("off"))).result(120)
            draft = eng.submit(GenerationRequest(prompt=prompt,
                                                 params=greedy("draft"))).result(240)
            m = draft.metrics
            assert m.drafted_tokens > 0
            # the same weights greedily: only batch-shape near-ties may refuse a draft
            assert m.acceptance is not None and m.acceptance >= 0.9
            assert_same_or_near_tie(demo_model, eng.tokenize(prompt), plain, draft)


def test_a_draft_model_of_another_vocabulary_is_refused_by_name(demo_model: Path,
                                                                tmp_path: Path) -> None:
    other = write_llama_vocab(tmp_path / "other-vocab.gguf", n_vocab=512)
    spec = LaunchSpec(str(demo_model), n_threads=1, n_ctx=256, spec_mode="draft",
                      draft_model_path=str(other))
    with pytest.raises(EngineError) as err:
        Engine(spec)
    message = str(err.value)
    assert "other-vocab.gguf" in message and demo_model.name in message
    assert "vocabularies differ" in message


def test_draft_mode_needs_a_draft_model_path(demo_model: Path) -> None:
    with pytest.raises(ValueError, match="draft_model_path"):
        LaunchSpec(str(demo_model), spec_mode="draft")
