"""logprobs, top_logprobs, echo scoring and logit_bias: request bodies into engine
requests, and the log-softmax the engine computes. Pure: no model, no sockets."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from engine.native import logprobs as native_lp
from engine.server.openai_schema import ApiError, ServedModel, parse_chat, parse_completion
from tests.engine.server_fixtures import validate

MODEL = ServedModel(id="tiny", n_ctx_per_seq=2048, n_vocab=1000)
MSGS = [{"role": "user", "content": "hi"}]


def _chat(**extra: Any) -> dict[str, Any]:
    return {"model": "tiny", "messages": MSGS, **extra}


def _completion(**extra: Any) -> dict[str, Any]:
    return {"model": "tiny", "prompt": "Once upon", **extra}


def test_chat_logprobs_and_top_logprobs_reach_the_engine() -> None:
    p = parse_chat(_chat(logprobs=True, top_logprobs=5), MODEL).generation.params
    assert (p.logprobs, p.prompt_logprobs) == (5, False)
    assert parse_chat(_chat(logprobs=True), MODEL).generation.params.logprobs == 0
    assert parse_chat(_chat(logprobs=False), MODEL).generation.params.logprobs is None


def test_completion_echo_with_logprobs_scores_the_prompt_even_with_no_tokens() -> None:
    parsed = parse_completion(_completion(echo=True, logprobs=1, max_tokens=0), MODEL)
    p = parsed.generation.params
    assert (p.logprobs, p.prompt_logprobs, p.max_tokens, parsed.echo) == (1, True, 0, True)
    p = parse_completion(_completion(logprobs=3, max_tokens=4), MODEL).generation.params
    assert (p.logprobs, p.prompt_logprobs) == (3, False)


def test_a_prompt_of_token_ids_is_decoded_as_given() -> None:
    for prompt in ([5, 17, 3], [[5, 17, 3]]):
        parsed = parse_completion(_completion(prompt=prompt, echo=True, logprobs=1,
                                              max_tokens=1), MODEL)
        assert parsed.generation.prompt_tokens == (5, 17, 3)
        assert parsed.generation.prompt is None


def test_logit_bias_becomes_token_bias_pairs() -> None:
    p = parse_chat(_chat(logit_bias={"5": -100, "999": 100, "7": 2.5}), MODEL).generation.params
    assert sorted(p.logit_bias) == [(5, -100.0), (7, 2.5), (999, 100.0)]
    assert parse_completion(_completion(logit_bias={}), MODEL).generation.params.logit_bias == ()


@pytest.mark.parametrize(("body", "param", "words"), [
    (_chat(logprobs=1), "logprobs", "true or false"),
    (_chat(logprobs=True, top_logprobs=21), "top_logprobs", "20"),
    (_chat(top_logprobs=3), "top_logprobs", "needs 'logprobs'"),
    (_chat(logit_bias=[1, 2]), "logit_bias", "object"),
    (_chat(logit_bias={"-3": 1}), "logit_bias", "token ids"),
    (_chat(logit_bias={"ten": 1}), "logit_bias", "token ids"),
    (_chat(logit_bias={"1000": 1}), "logit_bias", "vocabulary has 1000"),
    (_chat(logit_bias={"1": 100.5}), "logit_bias", "-100 to 100"),
    (_chat(logit_bias={"1": "x"}), "logit_bias", "-100 to 100"),
    (_chat(logit_bias={"1": True}), "logit_bias", "-100 to 100"),
    (_chat(logit_bias={"1": None}), "logit_bias", "-100 to 100"),
    (_chat(logit_bias={str(i): 1 for i in range(1025)}), "logit_bias", "at most 1024"),
    (_completion(logprobs=6), "logprobs", "at most 5"),
    (_completion(logprobs=True), "logprobs", "integer"),
    (_completion(max_tokens=0), "max_tokens", "echo"),
    (_completion(max_tokens=0, echo=True), "max_tokens", "logprobs"),
    (_chat(max_tokens=0, logprobs=True), "max_tokens", "at least 1"),
    (_completion(prompt=[1, 1000]), "prompt", "outside the vocabulary (0..999)"),
    (_completion(prompt=[1, -1]), "prompt", "outside the vocabulary"),
    (_completion(prompt=[[1], [2]]), "prompt", "one prompt per request"),
    (_completion(prompt=[1, True]), "prompt", "token ids"),
    (_completion(prompt=[]), "prompt", "token ids"),
])
def test_bad_logprobs_and_logit_bias_are_400_naming_the_field(body: dict[str, Any], param: str,
                                                                words: str) -> None:
    parse = parse_chat if "messages" in body else parse_completion
    with pytest.raises(ApiError) as info:
        parse(body, MODEL)
    validate(info.value.to_json(), "ErrorResponse")
    assert info.value.status == 400 and info.value.param == param
    assert words in info.value.message


def test_log_softmax_and_top_tokens_match_a_plain_computation() -> None:
    rng = np.random.default_rng(7)
    rows = (rng.standard_normal((3, 500)) * 8).astype(np.float32)
    norm = native_lp._log_normaliser(rows)
    for row, n in zip(rows.astype(np.float64), norm[:, 0], strict=True):
        assert n == pytest.approx(math.log(sum(math.exp(x) for x in row)), rel=1e-6)
    top = native_lp._top_ids(rows, 4)
    assert top.tolist() == [list(np.argsort(-r, kind="stable")[:4]) for r in rows]


@pytest.mark.parametrize("seed", range(4))
def test_top_tokens_of_a_large_row_match_a_full_sort_ties_included(seed: int) -> None:
    rng = np.random.default_rng(seed)
    row = np.round(rng.standard_normal(49152) * (1 + seed)).astype(np.float32)
    for n in (1, 5, 20):
        got = native_lp._top_ids(row[None, :], n)[0].tolist()
        assert got == np.argsort(-row, kind="stable")[:n].tolist()
