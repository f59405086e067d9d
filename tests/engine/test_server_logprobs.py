"""logprobs, echo scoring and logit_bias end to end: a real ``loadout serve`` of the demo
model, the real ``openai`` client, and ``litellm`` as a second client."""

from __future__ import annotations

import math
import os
import threading
from typing import Any

import openai
import pytest

from tests.engine.server_fixtures import (  # noqa: F401
    ServerProcess,
    client_fixture,
    server_fixture,
    validate,
)

pytestmark = pytest.mark.slow

ASK = [{"role": "user", "content": "Name one colour."}]
SENTENCE = "The cat sat on the mat because it was warm."
SHUFFLED = "mat the because sat warm cat. was The on it"


def _check_ranked(top: list[float]) -> None:
    """Log-probabilities of the most likely tokens: sorted, each <= 0, mass <= 1."""
    assert top == sorted(top, reverse=True)
    assert all(lp <= 0.0 for lp in top)
    assert sum(math.exp(lp) for lp in top) <= 1.0 + 1e-9


def _chat_logprobs(client: Any, server: ServerProcess, **extra: Any) -> Any:
    return client.chat.completions.create(**{"model": server.model, "messages": ASK,
                                             "max_tokens": 4, "temperature": 0,
                                             "logprobs": True, **extra})


def test_chat_logprobs_the_greedy_token_is_the_top_one(server: ServerProcess,
                                                       client: Any) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model=server.model, messages=ASK, max_tokens=4, temperature=0, logprobs=True,
        top_logprobs=3)
    validate(raw.http_response.json(), "CreateChatCompletionResponse")
    choice = raw.parse().choices[0]
    content = choice.logprobs.content
    assert len(content) == 4 and "".join(t.token for t in content) == choice.message.content
    for entry in content:
        assert len(entry.top_logprobs) == 3
        assert entry.top_logprobs[0].token == entry.token
        assert entry.top_logprobs[0].logprob == entry.logprob
        assert bytes(entry.bytes).decode() == entry.token
        _check_ranked([t.logprob for t in entry.top_logprobs])

    streamed = []
    for chunk in _chat_logprobs(client, server, top_logprobs=3, stream=True):
        if chunk.choices and chunk.choices[0].logprobs is not None:
            streamed += chunk.choices[0].logprobs.content
    assert [t.token for t in streamed] == [t.token for t in content]
    # the same greedy answer; the prompt's cached prefix may shift the last digits
    assert [t.logprob for t in streamed] == pytest.approx([t.logprob for t in content],
                                                          abs=0.05)
    plain = _chat_logprobs(client, server).choices[0].logprobs.content
    assert [t.top_logprobs for t in plain] == [[]] * 4


def test_completions_logprobs_in_the_legacy_shape(server: ServerProcess, client: Any) -> None:
    prompt = "The capital of France is"
    raw = client.completions.with_raw_response.create(
        model=server.model, prompt=prompt, max_tokens=4, temperature=0, logprobs=2)
    validate(raw.http_response.json(), "CreateCompletionResponse")
    choice = raw.parse().choices[0]
    lp = choice.logprobs
    assert "".join(lp.tokens) == choice.text and len(lp.tokens) == 4
    offsets = [len(prompt)]
    for token in lp.tokens[:-1]:
        offsets.append(offsets[-1] + len(token))
    assert lp.text_offset == offsets  # characters of prompt + text
    for token, own, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs, strict=True):
        assert len(top) == 2 and max(top, key=top.get) == token and top[token] == own
        _check_ranked(sorted(top.values(), reverse=True))


def _score(client: Any, server: ServerProcess, text: str) -> Any:
    return client.completions.create(model=server.model, prompt=text, echo=True, logprobs=1,
                                     max_tokens=0)


def test_echo_with_max_tokens_0_scores_the_prompt(server: ServerProcess, client: Any) -> None:
    doc = _score(client, server, SENTENCE)
    choice = doc.choices[0]
    lp = choice.logprobs
    assert choice.text == SENTENCE and "".join(lp.tokens) == SENTENCE
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert len(lp.tokens) == doc.usage.prompt_tokens and doc.usage.completion_tokens == 0
    assert lp.text_offset[0] == 0 and all(x < 0.0 for x in lp.token_logprobs[1:])
    for own, top in zip(lp.token_logprobs[1:], lp.top_logprobs[1:], strict=True):
        assert len(top) == 1 and max(top.values()) >= own
    shuffled = _score(client, server, SHUFFLED).choices[0].logprobs
    assert sum(lp.token_logprobs[1:]) > sum(shuffled.token_logprobs[1:]) + 10

    # streamed, with an answer after the echo: the prompt's scores come first, unchanged
    tokens: list[str] = []
    scores: list[float | None] = []
    text = ""
    for chunk in client.completions.create(model=server.model, prompt=SENTENCE, echo=True,
                                           logprobs=1, max_tokens=3, temperature=0,
                                           stream=True):
        text += chunk.choices[0].text
        if chunk.choices[0].logprobs is not None:
            tokens += chunk.choices[0].logprobs.tokens
            scores += chunk.choices[0].logprobs.token_logprobs
    assert text.startswith(SENTENCE) and "".join(tokens) == text
    assert len(tokens) == len(lp.tokens) + 3
    assert scores[:len(lp.tokens)] == pytest.approx(lp.token_logprobs, abs=1e-3)


def test_a_prompt_of_token_ids_is_scored_as_evaluation_harnesses_ask(
        server: ServerProcess, client: Any) -> None:
    chat = _chat_logprobs(client, server).choices[0]
    ids = [t.model_extra["id"] for t in chat.logprobs.content]
    # lm-eval's local-completions: one prompt of token ids, echo, logprobs 1, max_tokens 1
    choice = client.completions.create(model=server.model, prompt=[ids], echo=True,
                                       logprobs=1, max_tokens=1, temperature=0).choices[0]
    lp = choice.logprobs
    assert choice.text.startswith(chat.message.content)
    assert lp.tokens[:len(ids)] == [t.token for t in chat.logprobs.content]
    assert len(lp.tokens) == len(ids) + 1 and lp.token_logprobs[0] is None
    assert "".join(lp.tokens) == choice.text
    greedy = [own == max(top.values())
              for own, top in zip(lp.token_logprobs[1:], lp.top_logprobs[1:], strict=True)]
    assert greedy[-1]  # the generated token, at temperature 0
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model=server.model, prompt=[ids[0], 10**9], max_tokens=1)
    assert info.value.body["param"] == "prompt"


def test_a_prompt_scored_beside_a_running_answer_scores_the_same(server: ServerProcess,
                                                                 client: Any) -> None:
    alone = _score(client, server, SENTENCE).choices[0].logprobs.token_logprobs
    started = threading.Event()

    def answer() -> None:  # another slot decodes in the same batches meanwhile
        for _ in client.completions.create(model=server.model, prompt="Count: 1, 2, 3,",
                                           max_tokens=40, temperature=0, stream=True):
            started.set()

    other = threading.Thread(target=answer)
    other.start()
    try:
        assert started.wait(60)
        beside = _score(client, server, SENTENCE).choices[0].logprobs.token_logprobs
    finally:
        other.join(120)
    assert beside[0] is None
    assert beside[1:] == pytest.approx(alone[1:], abs=0.05)


def test_logit_bias_bans_the_greedy_token_and_forces_another(server: ServerProcess,
                                                             client: Any) -> None:
    first = _chat_logprobs(client, server, top_logprobs=2, max_tokens=2).choices[0]
    greedy, runner_up = first.logprobs.content[0].top_logprobs
    greedy_id, runner_id = greedy.model_extra["id"], runner_up.model_extra["id"]
    banned = _chat_logprobs(client, server, max_tokens=2,
                            logit_bias={str(greedy_id): -100}).choices[0]
    assert banned.message.content != first.message.content
    assert banned.logprobs.content[0].model_extra["id"] != greedy_id
    forced = _chat_logprobs(client, server, max_tokens=3,
                            logit_bias={str(runner_id): 100}).choices[0]
    ids = [t.model_extra["id"] for t in forced.logprobs.content]
    assert ids == [runner_id] * 3
    # the numbers are of the model's distribution, before the bias
    assert forced.logprobs.content[0].logprob == pytest.approx(runner_up.logprob, abs=0.05)


@pytest.mark.parametrize(("path", "body", "param"), [
    ("chat", {"logprobs": True, "top_logprobs": 99}, "top_logprobs"),
    ("chat", {"logprobs": "yes"}, "logprobs"),
    ("chat", {"logit_bias": {"49152": 5}}, "logit_bias"),
    ("chat", {"logit_bias": {"12": -101}}, "logit_bias"),
    ("chat", {"logit_bias": {"twelve": 1}}, "logit_bias"),
    ("completions", {"logprobs": 9}, "logprobs"),
    ("completions", {"max_tokens": 0}, "max_tokens"),
])
def test_malformed_logprobs_and_logit_bias_are_400(server: ServerProcess, client: Any,
                                                   path: str, body: dict[str, Any],
                                                   param: str) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        if path == "chat":
            client.chat.completions.create(model=server.model, messages=ASK, max_tokens=1,
                                           extra_body=body)
        else:
            client.completions.create(model=server.model, prompt="Hi", extra_body=body)
    assert info.value.status_code == 400 and info.value.body["param"] == param


@pytest.mark.filterwarnings("ignore::UserWarning")  # litellm's own pydantic models
def test_litellm_reads_the_logprobs(server: ServerProcess) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch at import
    litellm = pytest.importorskip("litellm")
    answer = litellm.completion(model=f"openai/{server.model}", api_base=server.base_url,
                                api_key="not-needed", messages=ASK, max_tokens=3,
                                temperature=0, logprobs=True, top_logprobs=2)
    content = answer.choices[0].logprobs["content"] \
        if isinstance(answer.choices[0].logprobs, dict) else answer.choices[0].logprobs.content
    tokens = [t["token"] if isinstance(t, dict) else t.token for t in content]
    assert "".join(tokens) == answer.choices[0].message.content and len(tokens) == 3
