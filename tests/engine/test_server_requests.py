"""Request bodies into engine requests, tool calls out of answers, schemas into grammars.

Pure: no model, no sockets. Every error document is checked against ``ErrorResponse``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.server import grammar, tools
from engine.server.openai_schema import ApiError, ServedModel, parse_chat, parse_completion
from tests.engine.server_fixtures import validate

MODEL = ServedModel(id="tiny", aliases=frozenset({"demo"}), n_ctx_per_seq=2048)
MSGS = [{"role": "user", "content": "hi"}]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {}}}}


def _chat(**extra: Any) -> dict[str, Any]:
    return {"model": "tiny", "messages": MSGS, **extra}


def _error(body: Any, parse: Any = parse_chat, model: ServedModel = MODEL) -> ApiError:
    with pytest.raises(ApiError) as info:
        parse(body, model)
    validate(info.value.to_json(), "ErrorResponse")
    return info.value


def test_sampling_fields_reach_the_engine_request() -> None:
    parsed = parse_chat(_chat(temperature=0.2, top_p=0.5, top_k=7, min_p=0.1, seed=42,
                              max_tokens=33, stop="END", presence_penalty=0.5,
                              frequency_penalty=-0.5, repeat_penalty=1.1,
                              loop_guard="retry", cache_prompt=False, stream=True,
                              stream_options={"include_usage": True}), MODEL)
    p = parsed.generation.params
    assert (p.temperature, p.top_p, p.top_k, p.min_p, p.seed, p.max_tokens) == \
        (0.2, 0.5, 7, 0.1, 42, 33)
    assert (p.stop, p.presence_penalty, p.frequency_penalty, p.repeat_penalty) == \
        (("END",), 0.5, -0.5, 1.1)
    assert p.loop_guard == "retry" and p.grammar is None and not p.cache_prompt
    assert parse_chat(_chat(), MODEL).generation.params.cache_prompt
    assert parsed.stream and parsed.include_usage
    assert parsed.generation.messages == ({"role": "user", "content": "hi"},)


def test_max_tokens_defaults_to_the_sequence_context_and_prefers_the_new_name() -> None:
    assert parse_chat(_chat(), MODEL).generation.params.max_tokens == 2048
    parsed = parse_chat(_chat(max_tokens=10, max_completion_tokens=20), MODEL)
    assert parsed.generation.params.max_tokens == 20


def test_aliases_name_the_same_model_and_anything_else_is_404() -> None:
    assert parse_chat({**_chat(), "model": "demo"}, MODEL)
    err = _error({**_chat(), "model": "gpt-4"})
    assert err.status == 404 and err.code == "model_not_found" and "tiny" in err.message


@pytest.mark.parametrize(("body", "param"), [
    ({"messages": MSGS}, "model"),
    ({"model": "tiny"}, "messages"),
    (_chat(messages="hi"), "messages"),
    (_chat(messages=[{"role": "robot", "content": "x"}]), "messages[0].role"),
    (_chat(messages=[{"role": "user", "content": [{"type": "image_url"}]}]),
     "messages[0].content[0].image_url"),
    (_chat(messages=[{"role": "user", "content": [{"type": "input_audio"}]}]),
     "messages[0].content"),
    (_chat(temperature=-1), "temperature"),
    (_chat(temperature=float("nan")), "temperature"),
    (_chat(temperature=True), "temperature"),
    (_chat(max_tokens=1.5), "max_tokens"),
    (_chat(top_k=-1), "top_k"),
    (_chat(stop=["a"] * 17), "stop"),
    (_chat(n=9), "n"),
    (_chat(n=2, stream=True), "n"),
    (_chat(logprobs=3), "logprobs"),
    (_chat(logit_bias={"x": 5}), "logit_bias"),
    (_chat(stream="yes"), "stream"),
    (_chat(loop_guard="forever"), "loop_guard"),
    (_chat(cache_prompt="no"), "cache_prompt"),
    (_chat(response_format={"type": "json_schema", "json_schema": {"schema": 3}}),
     "response_format.json_schema.schema"),
    (_chat(response_format={"type": "json_schema",
                            "json_schema": {"schema": {"type": "frobnicate"}}}),
     "response_format.json_schema.schema"),
    (_chat(tools=[{"type": "function"}]), "tools[0]"),
    (_chat(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "nope"}}),
     "tool_choice"),
    (_chat(tool_choice="required"), "tool_choice"),
])
def test_bad_chat_bodies_are_400_naming_the_field(body: dict[str, Any], param: str) -> None:
    err = _error(body)
    assert err.status == 400 and err.param == param


@pytest.mark.parametrize("body", [None, [], "text", 3])
def test_a_body_that_is_not_an_object_is_refused(body: Any) -> None:
    assert _error(body).status == 400


def test_content_parts_are_joined_and_developer_is_a_system_message() -> None:
    parsed = parse_chat(_chat(messages=[
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "a"},
                                     {"type": "text", "text": "b"}]}]), MODEL)
    assert parsed.generation.messages == ({"role": "system", "content": "be brief"},
                                          {"role": "user", "content": "ab"})


def test_json_schema_response_format_becomes_a_grammar() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    parsed = parse_chat(_chat(response_format={
        "type": "json_schema", "json_schema": {"name": "x", "schema": schema}}), MODEL)
    g = parsed.generation.params.grammar
    assert g is not None and "root ::=" in g and '"\\"a\\""' in g
    obj = parse_chat(_chat(response_format={"type": "json_object"}), MODEL)
    assert obj.generation.params.grammar is not None
    text = parse_chat(_chat(response_format={"type": "text"}), MODEL)
    assert text.generation.params.grammar is None


def test_forced_tool_without_template_support_gets_instructions_and_a_grammar() -> None:
    parsed = parse_chat(_chat(tools=[WEATHER, TIME], tool_choice="required"), MODEL)
    first = parsed.generation.messages[0]
    assert first["role"] == "system" and "get_weather" in first["content"]
    assert parsed.generation.tools is None  # the template cannot render them
    g = parsed.generation.params.grammar
    assert g is not None and "get_weather" in g and "get_time" in g
    named = parse_chat(_chat(tools=[WEATHER, TIME], tool_choice={
        "type": "function", "function": {"name": "get_time"}}), MODEL)
    g2 = named.generation.params.grammar
    assert g2 is not None and "get_time" in g2 and "get_weather" not in g2


def test_template_with_tool_support_receives_the_tools() -> None:
    model = ServedModel(id="tiny", template_tools=True)
    parsed = parse_chat(_chat(tools=[WEATHER]), model)
    assert parsed.generation.tools == (WEATHER,) and parsed.generation.params.grammar is None
    assert parsed.generation.messages == ({"role": "user", "content": "hi"},)
    none = parse_chat(_chat(tools=[WEATHER], tool_choice="none"), model)
    assert none.generation.tools is None and none.tools == ()


def test_completion_body_checks() -> None:
    parsed = parse_completion({"model": "tiny", "prompt": ["Once"], "echo": True,
                               "max_tokens": 5}, MODEL)
    assert parsed.generation.prompt == "Once" and parsed.echo
    assert _error({"model": "tiny"}, parse_completion).param == "prompt"
    assert _error({"model": "tiny", "prompt": ["a", "b"]}, parse_completion).param == "prompt"
    assert _error({"model": "tiny", "prompt": "x", "suffix": "y"},
                  parse_completion).param == "suffix"


# ---------------------------------------------------------------- tool calls


@pytest.mark.parametrize("text", [
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    '{"name": "get_weather", "parameters": {"city": "Paris"}}',
    ' {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}',
    '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
])
def test_tool_calls_are_found_in_each_template_style(text: str) -> None:
    content, calls = tools.parse_tool_calls(text, [WEATHER])
    assert content is None
    (call,) = calls
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    assert call.id.startswith("call_")


def test_text_before_tagged_calls_stays_content_and_unknown_names_are_ignored() -> None:
    text = ('Let me check.<tool_call>{"name": "get_weather", "arguments": {"city": "A"}}'
            '</tool_call><tool_call>{"name": "get_time", "arguments": {}}</tool_call>')
    content, calls = tools.parse_tool_calls(text, [WEATHER, TIME])
    assert content == "Let me check." and [c.name for c in calls] == ["get_weather", "get_time"]
    plain, none = tools.parse_tool_calls('{"name": "rm_rf", "arguments": {}}', [WEATHER])
    assert none == () and plain == '{"name": "rm_rf", "arguments": {}}'


def test_fallback_turns_tool_history_into_text() -> None:
    history = [{"role": "user", "content": "weather?"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "A"}'}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    out = tools.with_fallback_tools(history, [WEATHER], forced=False)
    assert out[0]["role"] == "system" and "get_weather" in out[0]["content"]
    assert json.loads(out[2]["content"]) == {"name": "get_weather", "arguments": {"city": "A"}}
    assert out[3] == {"role": "user", "content": "Function result: sunny"}


# ---------------------------------------------------------------- grammars


def test_short_string_and_small_integer_bounds_become_structural() -> None:
    g = grammar.schema_to_gbnf({"type": "object", "properties": {
        "code": {"type": "string", "maxLength": 2},
        "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 4}}})
    n_rule = next(line for line in g.splitlines() if line.startswith("n ::="))
    assert n_rule == 'n ::= "1" | "2" | "3"'
    code_rule = next(line for line in g.splitlines() if line.startswith("code ::="))
    assert code_rule.count("code-1") == 2  # at most two characters
    # a pattern's "." inside a JSON string never yields a bare quote or backslash
    dot = next(line for line in g.splitlines() if line.startswith("dot ::="))
    assert dot.startswith('dot ::= [^"\\\\')


def test_unsupported_schema_raises_our_error() -> None:
    with pytest.raises(grammar.SchemaNotSupported):
        grammar.schema_to_gbnf({"$ref": "https://example.com/schema.json"})
    with pytest.raises(grammar.SchemaNotSupported):
        grammar.tool_call_gbnf([WEATHER], only="missing")


# ---------------------------------------------------------------- SSE


@pytest.mark.parametrize("text", ["hello", "", 'quote " and \\ back', "é\n\x00 \u2028"])
def test_fast_delta_events_are_byte_identical_to_the_whole_document(text: str) -> None:
    from engine.server import openai_responses as oa
    from engine.server import sse

    template = oa.chat_chunk("chatcmpl-1", 7, 'm"odel', {"content": sse.DeltaEvents.PLACEHOLDER})
    fast = sse.DeltaEvents(template).event(text)
    assert fast == sse.encode_event(oa.chat_chunk("chatcmpl-1", 7, 'm"odel',
                                                  {"content": text}))
    doc = json.loads(fast.removeprefix(b"data: "))
    validate(doc, "CreateChatCompletionStreamResponse")
    assert doc["choices"][0]["delta"]["content"] == text


# ---------------------------------------------------------------- template tool support

HERMES_STYLE = (
    "{% if tools %}<|im_start|>system\nTools:\n{% for t in tools %}{{ t | tojson }}\n"
    "{% endfor %}Call one inside <tool_call></tool_call>.<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
PLAIN = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
         "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class _TemplateOnly:
    """The engine's own template renderer with a given template (no model needed)."""

    def __init__(self, template: str) -> None:
        self.template = template

    def render_chat(self, messages: Any, tools: Any = None,
                    add_generation_prompt: bool = True) -> str:
        from engine.chat_template import render_chat

        return render_chat(self.template, messages, tools=tools,
                           add_generation_prompt=add_generation_prompt)


@pytest.mark.parametrize(("template", "supported"), [(HERMES_STYLE, True), (PLAIN, False),
                                                     ("{{ raise_exception('no') }}", False)])
def test_tool_support_is_read_from_what_the_template_renders(template: str,
                                                             supported: bool) -> None:
    from engine.server.state import template_renders_tools

    assert template_renders_tools(_TemplateOnly(template)) is supported  # type: ignore[arg-type]


@pytest.mark.parametrize(("start", "held"), [
    ("", True), ("  ", True), ("{", True), ('{"name": "get_weather"', True), ("[TOOL", True),
    ("<tool", True), ("<tool_call>\n{", True), ("```json", True), ("The weather", False),
    ("Sure!", False), ("<b>bold</b> and a long sentence", False),
])
def test_streamed_answers_are_held_only_while_they_may_be_a_call(start: str,
                                                                 held: bool) -> None:
    assert tools.may_be_call(start) is held
