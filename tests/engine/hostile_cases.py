"""The hostile corpus: requests an attacker (or a broken client) sends to ``loadout serve``.

Each :class:`Case` is one HTTP request and the status it must get; every case is sent to a
running server and the server's health is checked after it
(``tests/engine/test_hostile_corpus.py``). The cases cover the grammar and schema budget,
field types and sizes, malformed bodies, and the local-server protections (Host, Origin,
content type, body size).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.server.errors import ApiError

MODEL = "demo"
USER = [{"role": "user", "content": "hi"}]
JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class Case:
    """One request: ``body`` is JSON-encoded unless it is bytes; ``status`` is expected."""

    name: str
    body: Any
    status: int
    path: str = "/v1/chat/completions"
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=lambda: dict(JSON))

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        return b"" if self.body is None else json.dumps(self.body).encode()


def chat(**fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": USER, "max_tokens": 4, **fields}


def completion(**fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "prompt": "x", "max_tokens": 4, **fields}


def schema(s: Any) -> dict[str, Any]:
    return chat(response_format={"type": "json_schema", "json_schema": {"name": "x",
                                                                         "schema": s}})


def nested_gbnf(depth: int) -> str:
    return "root ::= " + "(" * depth + '"a"' + ")" * depth


def _deep_json(depth: int) -> bytes:
    return b'{"model": "demo", "messages": ' + b"[" * depth + b"]" * depth + b"}"


def _tools(params: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": "f", "parameters": params}}]


GRAMMAR_CASES = [
    Case("schema_maxLength_1e6_crashed_the_server", schema(
        {"type": "string", "maxLength": 1000000}), 400),
    Case("schema_minItems_1e9_grew_memory", schema(
        {"type": "array", "items": {"type": "string"}, "minItems": 1000000000}), 400),
    Case("schema_maxItems_1e6", schema({"type": "array", "maxItems": 1000000}), 400),
    Case("schema_minLength_1e6", schema({"type": "string", "minLength": 1000000}), 400),
    Case("schema_bound_as_float", schema({"type": "string", "maxLength": 1e300}), 400),
    Case("schema_bound_negative", schema({"type": "string", "maxLength": -1}), 400),
    Case("schema_minimum_1e300", schema({"type": "integer", "minimum": -1e300,
                                         "maximum": 1e300}), 400),
    Case("schema_nested_bound_in_properties", schema(
        {"type": "object", "properties": {"a": {"type": "object", "properties": {
            "b": {"type": "string", "maxLength": 100000}}}}}), 400),
    Case("schema_pattern_nested_repetitions", schema(
        {"type": "string", "pattern": "^((a{0,500}){0,500}){0,500}$"}), 400),
    Case("schema_pattern_2000_chars", schema({"type": "string", "pattern": "a" * 2000}), 400),
    Case("schema_remote_ref", schema({"$ref": "https://example.com/s.json"}), 400),
    Case("schema_5000_properties", schema({"type": "object", "properties": {
        f"p{i}": {"type": "object"} for i in range(5000)}}), 400),
    Case("schema_not_an_object", schema([1, 2, 3]), 400),
    Case("gbnf_nested_200000_deep", completion(grammar=nested_gbnf(200000)), 400,
         "/v1/completions"),
    Case("gbnf_nested_just_over_the_depth", completion(grammar=nested_gbnf(1025)), 400,
         "/v1/completions"),
    Case("gbnf_3000_rules", completion(grammar="root ::= r0\n" + "".join(
        f'r{i} ::= "a" r{i + 1}\n' for i in range(3000)) + 'r3000 ::= "a"\n'), 400,
         "/v1/completions"),
    Case("gbnf_repetition_100000", completion(grammar='root ::= "a"{0,100000}'), 400,
         "/v1/completions"),
    Case("gbnf_over_64k", completion(grammar='root ::= "' + "a" * 70000 + '"'), 400,
         "/v1/completions"),
    Case("gbnf_syntax_error", completion(grammar="root ::= (((\"a\""), 400,
         "/v1/completions"),
    Case("gbnf_undefined_rule", completion(grammar="root ::= missing"), 400,
         "/v1/completions"),
    Case("gbnf_lone_surrogate", b'{"model": "demo", "prompt": "x", "max_tokens": 2, '
                                b'"grammar": "root ::= \\"\\ud800\\""}', 400,
         "/v1/completions"),
    Case("forced_tool_with_huge_bound", chat(
        tools=_tools({"type": "object", "properties": {"s": {"type": "string",
                                                             "maxLength": 10 ** 7}}}),
        tool_choice="required"), 400),
    # small but slow to apply (every placement of the optional items is a parse stack):
    # refused by the grammar checker before the engine thread sees them
    Case("gbnf_22_bytes_seconds_per_token", completion(grammar='root ::= ("a"?){0,200}'),
         400, "/v1/completions"),
    Case("gbnf_2000_optional_items", completion(grammar="root ::= " + '"a"? ' * 2000), 400,
         "/v1/completions"),
    Case("schema_pattern_of_optional_repetitions", schema(
        {"type": "string", "pattern": "^(a?){0,200}$"}), 400),
    # just under the limits: llama.cpp takes them and answers
    Case("gbnf_nested_at_the_depth_limit", completion(grammar=nested_gbnf(1024)), 200,
         "/v1/completions"),
    Case("schema_maxLength_at_the_limit", schema({"type": "string", "maxLength": 512}), 200),
    Case("gbnf_2000_rules_at_the_limit", completion(grammar="root ::= r0\n" + "".join(
        f'r{i} ::= "a" r{i + 1}\n' for i in range(1998)) + 'r1998 ::= "a"\n'), 200,
         "/v1/completions"),
    Case("gbnf_repetition_at_the_limit", completion(grammar='root ::= "a"{0,2000}'), 200,
         "/v1/completions"),
    Case("gbnf_64k_at_the_limit", completion(
        grammar='root ::= "' + "a" * (64 * 1024 - 11) + '"'), 200, "/v1/completions"),
]

TYPE_CASES = [
    Case("tool_choice_name_of_wrong_type", chat(
        tools=_tools({"type": "object"}),
        tool_choice={"type": "function", "function": {"name": [1]}}), 400),
    Case("assistant_tool_calls_empty_object", chat(
        tools=_tools({"type": "object"}),
        messages=[*USER, {"role": "assistant", "content": None, "tool_calls": [{}]},
                  {"role": "tool", "tool_call_id": "x", "content": "1"}]), 400),
    Case("tool_call_arguments_a_list", chat(messages=[*USER, {
        "role": "assistant", "tool_calls": [{"type": "function", "function": {
            "name": "f", "arguments": [1]}}]}]), 400),
    Case("json_nested_100000_deep", _deep_json(100000), 400),
    Case("json_nested_100_deep", _deep_json(100), 400),
    Case("body_is_an_array", [1, 2], 400),
    Case("body_is_a_string", "hello", 400),
    Case("role_is_a_number", chat(messages=[{"role": 1, "content": "x"}]), 400),
    Case("content_part_not_an_object", chat(messages=[{"role": "user", "content": [1]}]),
         400),
    Case("name_is_an_object", chat(messages=[{"role": "user", "content": "x",
                                              "name": {}}]), 400),
    Case("tool_call_id_is_a_list", chat(messages=[*USER, {"role": "tool", "content": "x",
                                                          "tool_call_id": [1]}]), 400),
    Case("temperature_a_string", chat(temperature="hot"), 400),
    Case("temperature_nan", b'{"model": "demo", "messages": [{"role": "user", "content": '
                            b'"hi"}], "temperature": NaN}', 400),
    Case("max_tokens_infinity", b'{"model": "demo", "prompt": "x", "max_tokens": '
                                b'Infinity}', 400, "/v1/completions"),
    Case("max_tokens_1e30", chat(max_tokens=1e30), 400),
    Case("repeat_penalty_zero_divides", chat(repeat_penalty=0), 400),
    Case("seed_2_pow_70", chat(seed=2 ** 70), 400),
    Case("top_k_negative", chat(top_k=-1), 400),
    Case("stop_100_strings", chat(stop=["x"] * 100), 400),
    Case("stop_10000_chars", chat(stop=["x" * 10000]), 400),
    Case("speculative_a_string", chat(speculative="fast"), 400),
    Case("stream_options_a_list", chat(stream=True, stream_options=[]), 400),
    Case("stream_a_string", chat(stream="yes"), 400),
    Case("logit_bias_a_string", chat(logit_bias="x"), 400),
    Case("prompt_a_token_id_past_the_vocabulary", completion(prompt=[1, 2, 10**30]), 400,
         "/v1/completions"),
    Case("prompt_ints_and_strings", completion(prompt=[1, "two"]), 400, "/v1/completions"),
    Case("prompt_an_object", completion(prompt={"a": 1}), 400, "/v1/completions"),
    Case("model_a_list", chat(model=["demo"]), 400),
    Case("malformed_json", b'{"model": "demo", ', 400),
    Case("invalid_utf8", b'{"model": "\xff\xfe"}', 400),
    Case("empty_body", b"", 400),
    Case("integer_of_5000_digits", b'{"model": "demo", "max_tokens": ' + b"9" * 5000 + b"}",
         400),
    Case("model_a_lone_surrogate_is_not_text", b'{"model": "\\ud800", "messages": '
                                               b'[{"role": "user", "content": "hi"}]}', 400),
    Case("prompt_a_lone_surrogate", b'{"model": "demo", "prompt": "\\udfff", '
                                    b'"max_tokens": 1}', 400, "/v1/completions"),
    Case("schema_anyOf_empty_converts_to_an_empty_grammar", schema({"anyOf": []}), 400),
    # round 2: bodies whose size, not their fields, was the attack (checked off the loop)
    Case("json_3900000_numbers_stalled_every_client",
         b'{"model": "demo", "messages": [], "x": [' + b"1," * 3_900_000 + b"1]}", 400),
    Case("array_of_140000_items", chat(x=[0] * 140_000), 400),
    Case("object_of_140000_keys", chat(logit_bias={str(i): 0 for i in range(140_000)}), 400),
    Case("300_arrays_of_1000", chat(x=[[0] * 1000 for _ in range(300)]), 400),
    Case("messages_3000", chat(messages=USER * 3000), 400),
    Case("lone_surrogate_in_a_key", b'{"model": "demo", "messages": [{"role": "user", '
                                    b'"content": "x", "\\udc00": 1}]}', 400),
    Case("image_url_to_loopback_with_urls_off", chat(messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://127.0.0.1:1/x.png"}}]}]), 400),
    Case("unknown_route", chat(), 404, "/v1/does-not-exist"),
    Case("get_on_a_post_route", None, 405, "/v1/chat/completions", "GET", {}),
]

GUARD_CASES = [
    Case("host_rebound_name_posts", chat(), 403,
         headers={**JSON, "Host": "attacker.example:8080"}),
    Case("host_rebound_name_reads_status", None, 403, "/v1/loadout/status", "GET",
         {"Host": "attacker.example"}),
    Case("host_rebound_name_reads_models", None, 403, "/v1/models", "GET",
         {"Host": "localhost.attacker.example"}),
    Case("host_other_ip_on_loopback_bind", None, 403, "/v1/models", "GET",
         {"Host": "192.168.1.20"}),
    Case("foreign_origin_posts", chat(), 403,
         headers={**JSON, "Origin": "https://attacker.example"}),
    Case("null_origin_posts", chat(), 403, headers={**JSON, "Origin": "null"}),
    Case("cross_site_form_text_plain", chat(), 415,
         headers={"Content-Type": "text/plain"}),
    Case("form_urlencoded", b"model=demo", 415,
         headers={"Content-Type": "application/x-www-form-urlencoded"}),
    Case("no_content_type", chat(), 415, headers={}),
    Case("multipart", chat(), 415, headers={"Content-Type": "multipart/form-data; b=x"}),
    Case("declared_body_over_the_limit", b"{}", 413,
         headers={**JSON, "Content-Length": str(64 * 1024 * 1024)}),
]

CASES = GRAMMAR_CASES + TYPE_CASES + GUARD_CASES


def api_error_of(parse: Callable[..., Any], *args: Any) -> ApiError:
    """The ApiError ``parse(*args)`` raises (fails the test when it raises none)."""
    try:
        parse(*args)
    except ApiError as err:
        return err
    raise AssertionError("no ApiError was raised")
