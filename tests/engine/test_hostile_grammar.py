"""The grammar and schema budget on its own: what counts toward each limit, what does not
(literals, classes and comments), and the bounded compile time of a request's grammar."""

from __future__ import annotations

import dataclasses

import pytest
from starlette.testclient import TestClient

from engine.server.grammar_budget import (
    DEFAULT_LIMITS,
    BudgetExceeded,
    check_gbnf,
    check_pattern,
    check_schema,
)

LIMITS = dataclasses.replace(DEFAULT_LIMITS, max_depth=4, max_rules=3, max_repetition=10,
                             max_grammar_bytes=200, max_schema_bound=20,
                             max_pattern_expansion=100, max_schema_nodes=10,
                             max_schema_depth=6)


def _limit_of(fn: object, *args: object, **kwargs: object) -> tuple[str, str]:
    with pytest.raises(BudgetExceeded) as info:
        fn(*args, **kwargs)  # type: ignore[operator]
    return info.value.limit, info.value.field


@pytest.mark.parametrize(("text", "limit"), [
    ("root ::= " + "(" * 5 + '"a"' + ")" * 5, "max_depth"),
    ('root ::= a\na ::= b\nb ::= c\nc ::= "x"', "max_rules"),
    ('root ::= "a"{0,11}', "max_repetition"),
    ('root ::= "a"{11}', "max_repetition"),
    ('root ::= "' + "a" * 300 + '"', "max_grammar_bytes"),
    ('root ::= "\ud800"', "utf8"),
])
def test_grammars_over_a_limit_name_it(text: str, limit: str) -> None:
    assert _limit_of(check_gbnf, text, LIMITS) == (limit, "grammar")


@pytest.mark.parametrize("text", [
    "root ::= " + "(" * 4 + '"a"' + ")" * 4,                    # at the depth limit
    'root ::= "((((((((" [(((((] # (((((( ::= ::= ::=\n',       # literals, classes, comments
    'root ::= "\\"(((((" a\na ::= "x"{0,10}',                   # an escaped quote
])
def test_what_does_not_count(text: str) -> None:
    check_gbnf(text, LIMITS)


@pytest.mark.parametrize(("schema", "limit", "field"), [
    ({"type": "string", "maxLength": 21}, "max_schema_bound", "s.maxLength"),
    ({"type": "array", "minItems": 1e9}, "max_schema_bound", "s.minItems"),
    ({"type": "string", "maxLength": 2.5}, "type", "s.maxLength"),
    ({"type": "string", "minLength": True}, "type", "s.minLength"),
    ({"properties": {"a": {"properties": {"b": {"maxItems": 99}}}}}, "max_schema_bound",
     "s.properties.a.properties.b.maxItems"),
    ({"type": "integer", "maximum": 1e300}, "max_schema_number", "s.maximum"),
    ({"type": "number", "minimum": float("nan")}, "type", "s.minimum"),
    ({"$ref": "https://example.com/x"}, "remote_ref", "s.$ref"),
    ({"anyOf": [{"type": "null"}] * 11}, "max_schema_nodes", "s"),
    ({"items": {"items": {"items": {"items": {"items": {"items": {"items": {}}}}}}}},
     "max_schema_depth", "s" + ".items" * 7),
])
def test_schemas_over_a_limit_name_the_limit_and_the_path(schema: object, limit: str,
                                                          field: str) -> None:
    assert _limit_of(check_schema, schema, LIMITS, field="s") == (limit, field)


def test_property_names_and_enum_values_are_not_bounds() -> None:
    check_schema({"properties": {"maxLength": {"type": "string"}},
                  "enum": [{"maxLength": 10**9}]}, LIMITS)


@pytest.mark.parametrize(("pattern", "limit"), [
    ("a{21}", "max_schema_bound"),
    ("(a{0,20}){0,20}", "max_pattern_expansion"),
    ("((((((((a))))))))", "max_schema_depth"),
    ("a" * 2000, "max_pattern_chars"),
])
def test_patterns_over_a_limit(pattern: str, limit: str) -> None:
    assert _limit_of(check_pattern, pattern, LIMITS)[0] == limit


def test_patterns_within_the_budget() -> None:
    for pattern in ("^[a-z]{1,20}$", "(ab|cd){0,5}x*", r"\d{3}-\d{4}", "[(]{20}"):
        check_pattern(pattern, LIMITS)


def test_a_grammar_that_takes_too_long_to_build_is_a_400_and_the_loop_stays_free() -> None:
    """The conversion runs off the event loop; past its time limit the request is refused
    (here with a limit of zero, as a slow machine might meet a large schema)."""
    from engine.server.app import ServerState, build_app
    from engine.server.openai_schema import ServedModel
    from engine.server.request_model import DEFAULT_REQUEST_LIMITS
    from engine.server.security import SecurityPolicy

    class _Loaded(ServerState):
        def require(self):  # type: ignore[no-untyped-def]
            return object(), ServedModel(id="m")

    limits = dataclasses.replace(DEFAULT_REQUEST_LIMITS, grammar=dataclasses.replace(
        DEFAULT_LIMITS, compile_timeout_s=0.0))
    app = build_app(_Loaded(), SecurityPolicy(), limits)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        resp = client.post("/v1/chat/completions", json={
            "model": "m", "messages": [{"role": "user", "content": "x"}],
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "x", "schema": {"type": "object", "properties": {
                    f"p{i}": {"type": "string", "maxLength": 300} for i in range(20)}}}}})
        assert resp.status_code == 400
        assert "compile_timeout_s" in resp.json()["error"]["message"]
        assert client.get("/health").status_code in (200, 503)
