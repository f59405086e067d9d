"""Anthropic's assistant prefill on ``/v1/messages``: a trailing assistant message is the
start of the answer, which continues it without repeating it. A real ``loadout serve`` of
the demo model and the real ``anthropic`` client, greedy.

The check that can fail: the greedy answer's first words, given back as a prefill, make
the server write exactly the rest of that same greedy answer (the prompt is the same
rendered conversation with those words after the template's assistant opening). Were the
prefill answered as a turn of its own, the reply would start a new answer instead.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from tests.engine.server_fixtures import ServerProcess, post, server_fixture  # noqa: F401

pytestmark = pytest.mark.slow

GREEDY = {"temperature": 0}
ASK: Any = {"role": "user", "content": "List the days of the week, comma separated."}


@pytest.fixture(name="claude", scope="module")
def claude_fixture(server: ServerProcess) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="not-needed", max_retries=0,
                               timeout=120)


def _text(message: Any) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


def test_a_prefilled_answer_continues_its_text(server: ServerProcess,
                                               claude: anthropic.Anthropic) -> None:
    whole = _text(claude.messages.create(model=server.model, max_tokens=16, messages=[ASK],
                                         extra_body=GREEDY))
    words = whole.split(" ")
    assert len(words) >= 4, whole
    prefill = " ".join(words[:2]).rstrip()
    messages: Any = [ASK, {"role": "assistant", "content": prefill}]
    reply = claude.messages.create(model=server.model, max_tokens=6, messages=messages,
                                   extra_body=GREEDY)
    anthropic.types.Message.model_validate(reply.model_dump(mode="json", exclude_unset=True),
                                           strict=True)
    rest = _text(reply)
    assert rest and not rest.startswith(prefill), (prefill, rest)
    assert whole.startswith(prefill + rest), (whole, prefill, rest)
    # streamed: the same continuation, in text deltas
    with claude.messages.stream(model=server.model, max_tokens=6, messages=messages,
                                extra_body=GREEDY) as stream:
        deltas = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert deltas == rest == _text(final)
    # the prefill is in the prompt, and count_tokens counts it as the answer does
    count = claude.messages.count_tokens(model=server.model, messages=messages)
    plain = claude.messages.count_tokens(model=server.model, messages=[ASK])
    used = reply.usage.input_tokens + (reply.usage.cache_read_input_tokens or 0)
    assert count.input_tokens == used > plain.input_tokens


def test_a_prefill_ending_in_whitespace_is_refused(server: ServerProcess) -> None:
    status, doc = post(server, "/v1/messages", {
        "model": server.model, "max_tokens": 2,
        "messages": [ASK, {"role": "assistant", "content": "Monday, "}]})
    assert status == 400 and "trailing whitespace" in doc["error"]["message"]
    anthropic.types.ErrorResponse.model_validate(doc, strict=True)
