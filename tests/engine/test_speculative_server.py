"""Speculation chosen per request through the OpenAI server's ``speculative`` field, and
refused for models whose recurrent state cannot drop rejected drafts."""

from __future__ import annotations

from typing import Any

import pytest

from engine.launch import LaunchSpec
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine
from engine.server.openai_schema import ApiError, ServedModel, parse_chat, parse_completion
from engine.server.state import ServerState
from tests.engine.server_fixtures import validate
from tests.helpers.gguf_factory import write_qwen35

MODEL = ServedModel(id="tiny", n_ctx_per_seq=2048, spec_modes=("off", "ngram", "draft"))
MSGS = [{"role": "user", "content": "hi"}]


def _chat(**extra: Any) -> dict[str, Any]:
    return {"model": "tiny", "messages": MSGS, **extra}


def _error(body: Any, model: ServedModel = MODEL) -> ApiError:
    with pytest.raises(ApiError) as info:
        parse_chat(body, model)
    assert info.value.status == 400
    validate(info.value.to_json(), "ErrorResponse")
    return info.value


def test_speculative_field_reaches_the_engine_request() -> None:
    params = parse_chat(_chat(speculative={"mode": "ngram", "draft_tokens": 5}),
                        MODEL).generation.params
    assert (params.spec_mode, params.draft_tokens) == ("ngram", 5)
    completion = parse_completion({"model": "tiny", "prompt": "x",
                                   "speculative": {"mode": "draft"}}, MODEL)
    assert completion.generation.params.spec_mode == "draft"
    plain = parse_chat(_chat(), MODEL).generation.params
    assert plain.spec_mode is None and plain.draft_tokens is None  # the engine decides


@pytest.mark.parametrize(("spec", "param", "words"), [
    ("ngram", "speculative", "must be an object"),
    ({"mode": "eagle"}, "speculative.mode", "must be one of off, ngram, draft, mtp"),
    ({"mode": "mtp"}, "speculative.mode", "not loaded on this server (it has: off, ngram, draft)"),
    ({"mode": "ngram", "draft_tokens": 65}, "draft_tokens", "at most 64"),
    ({"mode": "ngram", "draft_tokens": "4"}, "draft_tokens", "must be an integer"),
    ({"mode": "ngram", "depth": 2}, "speculative", "not depth"),
])
def test_bad_speculative_values_are_clear_400s(spec: Any, param: str, words: str) -> None:
    err = _error(_chat(speculative=spec))
    assert err.param == param and words in err.message


@pytest.fixture(scope="module")
def hybrid_engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = write_qwen35(tmp_path_factory.mktemp("hybrid") / "qwen35.gguf")
    eng = Engine(LaunchSpec(str(path), n_threads=1, n_ctx=256, spec_mode="ngram"))
    yield eng
    eng.close()


@pytest.mark.slow
def test_a_recurrent_model_refuses_speculation_with_its_reason(hybrid_engine: Engine) -> None:
    assert hybrid_engine.speculation_refusal is not None
    assert "recurrent state" in hybrid_engine.speculation_refusal
    assert hybrid_engine.speculation_modes == ("off",)
    # the engine's own default stays off, and says why, instead of corrupting the answer
    params = SamplingParams(temperature=0.0, max_tokens=12, loop_guard="off", ignore_eos=True)
    final = hybrid_engine.submit(GenerationRequest(prompt="a b a b a b a b",
                                                   params=params)).result(60)
    assert final.metrics.drafted_tokens == 0
    assert final.metrics.speculation is not None
    assert final.metrics.speculation.startswith("ngram off: the model keeps a recurrent state")
    # the server refuses a request that asks for it
    state = ServerState()
    state.attach(hybrid_engine)
    assert state.served is not None
    err = _error({"model": state.served.id, "messages": MSGS,
                  "speculative": {"mode": "ngram"}}, state.served)
    assert err.message.startswith("this model cannot speculate: the model keeps a recurrent")
    ok = parse_chat({"model": state.served.id, "messages": MSGS,
                     "speculative": {"mode": "off"}}, state.served)
    assert ok.generation.params.spec_mode == "off"
