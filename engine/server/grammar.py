"""JSON schemas to GBNF grammars, so that ``response_format`` and forced tool calls are
enforced token by token by llama.cpp's grammar sampler rather than hoped for.

The conversion itself is llama-cpp-python's ``json_schema_to_gbnf``; this module wraps it
with our error type and builds the schemas for ``json_object`` and tool calls. Every schema
is checked against the :class:`~engine.server.grammar_budget.GrammarLimits` before it is
converted, and the grammar it converts to after.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from engine.server.grammar_budget import (
    DEFAULT_LIMITS,
    BudgetExceeded,
    GrammarLimits,
    SchemaNotSupported,
    check_gbnf,
    check_schema,
)

log = logging.getLogger(__name__)


def schema_to_gbnf(schema: Mapping[str, Any], prop_order: Sequence[str] = (),
                   limits: GrammarLimits = DEFAULT_LIMITS, field: str = "schema") -> str:
    """The GBNF grammar whose sentences are exactly the JSON documents valid for ``schema``.

    Args:
        schema: a JSON schema (local ``$ref``s allowed; remote ones are refused).
        prop_order: property names to emit first, in this order.
        limits: the budget the schema and its grammar must fit.
        field: the request field the schema came from (named in errors).

    Raises:
        BudgetExceeded: the schema, or the grammar it converts to, is over a limit.
        SchemaNotSupported: the schema uses something the converter does not handle.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    check_schema(schema, limits, field=field)
    try:
        text = json.dumps(_bounded(schema))
        grammar = str(json_schema_to_gbnf(text, list(prop_order)))
    except Exception as exc:  # the converter is not written for hostile input
        raise SchemaNotSupported(f"cannot build a grammar from this JSON schema: "
                                 f"{_why(exc)}") from exc
    # Inside a JSON string a pattern's "." must not produce a bare quote, backslash or
    # control character, or the document would not parse.
    grammar = grammar.replace(_CONVERTER_DOT, _JSON_STRING_DOT)
    check_gbnf(grammar, limits, field=field, max_bytes=limits.max_converted_bytes)
    return grammar


def _why(exc: Exception) -> str:
    """The converter's failure in the client's terms."""
    if isinstance(exc, KeyError) and exc.args and str(exc.args[0]).startswith("#"):
        return (f"the reference {str(exc.args[0])[:80]!r} cannot be resolved (a recursive "
                "definition may be referenced from inside a property, not as the whole "
                "schema)")
    if isinstance(exc, AttributeError | TypeError):
        return f"a keyword holds a value of the wrong type for a JSON schema ({exc})"
    return str(exc).replace("stdin#", "#")


_CONVERTER_DOT = "dot ::= [^\\x0A\\x0D]"
_JSON_STRING_DOT = ('dot ::= [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | '
                    '"u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])')
MAX_BOUNDED_LENGTH = 256
MAX_ENUMERATED_RANGE = 256
_NESTED = ("properties", "$defs", "definitions", "patternProperties")
_NESTED_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _bounded(node: Any) -> Any:
    """A copy of a schema with the bounds the converter ignores made structural.

    The converter in llama-cpp-python 0.3.x ignores ``minLength``/``maxLength`` and
    integer ``minimum``/``maximum``. Short strings get an equivalent ``pattern``; small
    integer ranges become an ``enum``. Larger bounds stay unenforced.
    """
    if isinstance(node, list):
        return [_bounded(n) for n in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _NESTED and isinstance(value, Mapping):
            out[key] = {k: _bounded(v) for k, v in value.items()}
        elif key in _NESTED_LISTS or key in ("items", "additionalProperties", "not"):
            out[key] = _bounded(value)
        else:
            out[key] = value
    plain = not any(k in out for k in ("enum", "const", "pattern", "format"))
    if out.get("type") == "string" and plain and ("minLength" in out or "maxLength" in out):
        lo = int(out.get("minLength", 0))
        hi = out.get("maxLength")
        if hi is None and lo <= MAX_BOUNDED_LENGTH:
            out["pattern"] = f"^.{{{lo},}}$"
        elif hi is not None and int(hi) <= MAX_BOUNDED_LENGTH:
            out["pattern"] = f"^.{{{lo},{int(hi)}}}$"
    if out.get("type") == "integer" and plain:
        lo_i = _int_bound(out, "minimum", "exclusiveMinimum", +1)
        hi_i = _int_bound(out, "maximum", "exclusiveMaximum", -1)
        if lo_i is not None and hi_i is not None and 0 <= hi_i - lo_i < MAX_ENUMERATED_RANGE:
            out["enum"] = list(range(lo_i, hi_i + 1))
    return out


def _int_bound(node: Mapping[str, Any], inclusive: str, exclusive: str,
               step: int) -> int | None:
    import math

    if isinstance(node.get(inclusive), int | float):
        value = float(node[inclusive])
        return math.ceil(value) if step > 0 else math.floor(value)
    if isinstance(node.get(exclusive), int | float):
        value = float(node[exclusive])
        return (math.floor(value) + 1) if step > 0 else (math.ceil(value) - 1)
    return None


def json_object_gbnf() -> str:
    """Any JSON object (``response_format: {"type": "json_object"}``)."""
    return schema_to_gbnf({"type": "object"})


def tool_call_schema(tools: Sequence[Mapping[str, Any]],
                     only: str | None = None) -> dict[str, Any]:
    """The schema of one call ``{"name": ..., "arguments": {...}}`` to one of ``tools``.

    Args:
        tools: OpenAI ``tools`` entries (``{"type": "function", "function": {...}}``).
        only: restrict to the function of this name (``tool_choice`` naming one).
    """
    alternatives: list[dict[str, Any]] = []
    for tool in tools:
        fn = tool["function"]
        if only is not None and fn["name"] != only:
            continue
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        alternatives.append({
            "type": "object",
            "properties": {"name": {"const": fn["name"]}, "arguments": params},
            "required": ["name", "arguments"],
        })
    if not alternatives:
        raise SchemaNotSupported(f"no tool named {only!r}")
    if len(alternatives) == 1:
        return alternatives[0]
    return {"anyOf": alternatives}


def tool_call_gbnf(tools: Sequence[Mapping[str, Any]], only: str | None = None,
                   limits: GrammarLimits = DEFAULT_LIMITS) -> str:
    """A grammar that forces exactly one tool call (see :func:`tool_call_schema`)."""
    for i, tool in enumerate(tools):  # each schema first, so an error names its tool
        params = tool["function"].get("parameters")
        if params is not None and (only is None or tool["function"]["name"] == only):
            check_schema(params, limits, field=f"tools[{i}].function.parameters")
    return schema_to_gbnf(tool_call_schema(tools, only), prop_order=("name", "arguments"),
                          limits=limits, field="tools")


__all__ = ["BudgetExceeded", "GrammarLimits", "SchemaNotSupported", "json_object_gbnf",
           "schema_to_gbnf", "tool_call_gbnf", "tool_call_schema"]
