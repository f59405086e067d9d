"""The budget a grammar or a JSON schema must fit before anything reaches llama.cpp.

llama.cpp's GBNF parser recurses once per parenthesised group with no depth limit, and
the JSON-schema converter expands ``maxLength`` / ``maxItems`` / ``minItems`` into nested
or repeated groups; an unchecked request can exhaust the engine thread's stack or the
process's memory. Everything here is a single pass without recursion (so a hostile input
cannot exhaust Python's stack either), and every refusal names the limit and the field.

llama.cpp's own limit is kept where it has one: a repetition ``{m,n}`` may not exceed
2000 (its ``MAX_REPETITION_THRESHOLD``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.server.gbnf_elements import (
    ELEMENT_CLOSE,
    comment_end,
    element_end,
    element_matching_nothing,
)

LLAMA_MAX_REPETITION = 2000  # llama-grammar.cpp MAX_REPETITION_THRESHOLD

_BOUND_KEYS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties",
               "maxProperties", "minContains", "maxContains")
_NUMBER_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_NAMED_KEYS = frozenset({"properties", "$defs", "definitions", "patternProperties",
                         "dependentSchemas"})
_DATA_KEYS = frozenset({"enum", "const", "default", "examples", "description", "title"})
_QUANTIFIER = re.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")


@dataclass(frozen=True)
class GrammarLimits:
    """How large a grammar or schema a request may carry.

    Attributes:
        max_grammar_bytes: a client's own GBNF ``grammar``, in UTF-8 bytes.
        max_converted_bytes: the grammar a JSON schema or a tool list converts to.
        max_rules: rule definitions in a grammar.
        max_depth: nested groups ``( ... )`` in a grammar (llama.cpp recurses per level).
        max_repetition: the largest ``{m,n}`` count (llama.cpp's own limit).
        max_schema_nodes: objects and arrays in a JSON schema.
        max_schema_depth: how deeply a JSON schema nests.
        max_schema_bound: the largest ``minLength``, ``maxLength``, ``minItems``,
            ``maxItems`` (the converter writes one nested group per unit).
        max_schema_number: the largest magnitude of ``minimum`` / ``maximum``.
        max_pattern_chars: the length of one ``pattern``.
        max_pattern_expansion: characters a ``pattern``'s repetitions may expand to.
        compile_timeout_s: the time a conversion may take (it runs off the event loop).
    """

    max_grammar_bytes: int = 64 * 1024
    max_converted_bytes: int = 256 * 1024
    max_rules: int = 2000
    max_depth: int = 1024
    max_repetition: int = LLAMA_MAX_REPETITION
    max_schema_nodes: int = 4096
    max_schema_depth: int = 48
    max_schema_bound: int = 512
    max_schema_number: float = float(2**53)
    max_pattern_chars: int = 1024
    max_pattern_expansion: int = 8192
    compile_timeout_s: float = 5.0


DEFAULT_LIMITS = GrammarLimits()


class SchemaNotSupported(ValueError):
    """A JSON schema the grammar converter cannot turn into a grammar."""


class BudgetExceeded(SchemaNotSupported):
    """A grammar or schema over one of the :class:`GrammarLimits`.

    Attributes:
        limit: the name of the limit (a :class:`GrammarLimits` field).
        field: the request field at fault (``grammar``, ``response_format...``).
    """

    def __init__(self, message: str, limit: str, field: str) -> None:
        super().__init__(message)
        self.limit = limit
        self.field = field


def check_gbnf(text: str, limits: GrammarLimits = DEFAULT_LIMITS, *, field: str = "grammar",
               max_bytes: int | None = None, n_vocab: int | None = None) -> None:
    """Check a GBNF text's size, rule count, nesting depth and repetition counts, and
    that no literal, character class or token reference matches nothing.

    The scan follows llama.cpp's lexer closely enough to skip literals, character
    classes, token references and comments; anything it cannot parse is left for
    llama.cpp to refuse (a parse error there is an ordinary 400, not a crash). An element
    that matches nothing (``[z-a]``, ``"\\UFFFFFFFF"``, ``<[N]>`` past the vocabulary)
    is refused here: llama.cpp parses it, then aborts the process when sampling reaches
    it with no token left.

    Args:
        n_vocab: the vocabulary size, the bound of ``<[N]>`` token references (None: not
            checked).

    Raises:
        BudgetExceeded: the grammar is over a limit, or matches nothing somewhere.
    """
    cap = limits.max_grammar_bytes if max_bytes is None else max_bytes
    limit_name = "max_grammar_bytes" if max_bytes is None else "max_converted_bytes"
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise BudgetExceeded("the grammar is not valid UTF-8 text", "utf8", field) from exc
    if size > cap:
        raise BudgetExceeded(f"the grammar is {size} bytes; the limit ({limit_name}) is "
                             f"{cap}", limit_name, field)
    depth = rules = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            i = comment_end(text, i)
            continue
        if c in ELEMENT_CLOSE:
            end = element_end(text, i)
            empty = element_matching_nothing(text[i:end], n_vocab)
            if empty is not None:
                raise BudgetExceeded(empty, "empty_element", field)
            i = end
            continue
        if c == "(":
            depth += 1
            if depth > limits.max_depth:
                raise BudgetExceeded(f"the grammar nests groups deeper than "
                                     f"{limits.max_depth} (max_depth)", "max_depth", field)
        elif c == ")":
            depth = max(0, depth - 1)
        elif c == ":" and text.startswith("::=", i):
            rules += 1
            if rules > limits.max_rules:
                raise BudgetExceeded(f"the grammar has more than {limits.max_rules} rules "
                                     "(max_rules)", "max_rules", field)
            i += 3
            continue
        elif c == "{":
            m = _QUANTIFIER.match(text, i)
            if m:
                for part in m.groups():
                    if part and int(part) > limits.max_repetition:
                        raise BudgetExceeded(
                            f"a repetition of {int(part)} is over the limit of "
                            f"{limits.max_repetition} (max_repetition)", "max_repetition",
                            field)
                lo, hi = m.groups()
                if lo and hi and int(hi) < int(lo):
                    raise BudgetExceeded(f"the repetition {m.group(0)} has its maximum below "
                                         "its minimum", "empty_element", field)
                i = m.end()
                continue
        i += 1


def check_schema(schema: Any, limits: GrammarLimits = DEFAULT_LIMITS, *,
                 field: str = "schema") -> None:
    """Check a JSON schema's size, depth and the bounds the converter would expand.

    Raises:
        BudgetExceeded: the schema is over a limit; ``field`` is extended with the path
            inside the schema (``schema.properties.name.maxLength``).
    """
    # (node, path, depth, whether node is a name -> schema map such as "properties")
    stack: list[tuple[Any, str, int, bool]] = [(schema, field, 0, False)]
    nodes = 0
    while stack:
        node, path, depth, named = stack.pop()
        if not isinstance(node, Mapping | list):
            continue
        nodes += 1
        if nodes > limits.max_schema_nodes:
            raise BudgetExceeded(f"the schema has more than {limits.max_schema_nodes} "
                                 "objects and arrays (max_schema_nodes)", "max_schema_nodes",
                                 field)
        if depth > limits.max_schema_depth:
            raise BudgetExceeded(f"the schema nests deeper than {limits.max_schema_depth} "
                                 "(max_schema_depth)", "max_schema_depth", path)
        if isinstance(node, list):
            stack.extend((v, f"{path}[{k}]", depth + 1, False) for k, v in enumerate(node))
            continue
        if named:
            stack.extend((v, f"{path}.{k}", depth + 1, False) for k, v in node.items())
            continue
        _check_schema_node(node, path, limits)
        for key, value in node.items():
            if key in _DATA_KEYS:
                continue
            stack.append((value, f"{path}.{key}", depth + 1, key in _NAMED_KEYS))


def _finite(value: Any) -> bool:
    # an int of any size is finite; math.isfinite overflows on one past 1e308
    return not isinstance(value, bool) and (
        isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)))


def _magnitude(value: float) -> str:
    if isinstance(value, int) and abs(value) >= 10 ** 15:
        return f"an integer of {len(str(abs(value)))} digits"
    return f"{value:g}"


# where a schema holds schemas: one, a name -> schema map, or a list of them
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "propertyNames", "if",
              "then", "else", "unevaluatedItems", "unevaluatedProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _check_shape(node: Mapping[str, Any], path: str) -> None:
    """Refuse a schema whose keywords that hold schemas hold something else (the converter
    fails on them with an internal error)."""
    def is_schema(v: Any) -> bool:
        return isinstance(v, Mapping | bool)

    for key in _NAMED_KEYS & node.keys():
        value = node[key]
        if not isinstance(value, Mapping):
            raise SchemaNotSupported(f"'{path}.{key}' must map names to JSON schemas")
        wrong = next((k for k, v in value.items() if not is_schema(v)), None)
        if wrong is not None:
            raise SchemaNotSupported(f"'{path}.{key}.{wrong}' must be a JSON schema (an "
                                     "object)")
    for key in _SUBSCHEMA_LISTS:
        value = node.get(key)
        if key in node and (not isinstance(value, list)
                            or not all(is_schema(v) for v in value)):
            raise SchemaNotSupported(f"'{path}.{key}' must be a list of JSON schemas")
    for key in ("anyOf", "oneOf", "enum"):
        if node.get(key) == []:
            raise SchemaNotSupported(f"'{path}.{key}' is empty: the schema matches nothing")
    for key in _SUBSCHEMA:
        value = node.get(key)
        if key in node and not is_schema(value) and not (
                key == "items" and isinstance(value, list)
                and all(is_schema(v) for v in value)):
            raise SchemaNotSupported(f"'{path}.{key}' must be a JSON schema (an object)")


def _check_schema_node(node: Mapping[str, Any], path: str, limits: GrammarLimits) -> None:
    _check_shape(node, path)
    for key in _BOUND_KEYS:
        if key not in node:
            continue
        value = node[key]
        where = f"{path}.{key}"
        if not _finite(value) or value < 0 or value != int(value):
            raise BudgetExceeded(f"'{key}' must be a non-negative integer", "type", where)
        if value > limits.max_schema_bound:
            raise BudgetExceeded(f"'{key}' is {_magnitude(value)}; the limit "
                                 f"(max_schema_bound) is {limits.max_schema_bound}",
                                 "max_schema_bound", where)
    for key in _NUMBER_KEYS:
        if key not in node:
            continue
        value = node[key]
        where = f"{path}.{key}"
        if not _finite(value):
            raise BudgetExceeded(f"'{key}' must be a finite number", "type", where)
        if abs(value) > limits.max_schema_number:
            raise BudgetExceeded(f"'{key}' is {_magnitude(value)}; its magnitude may not "
                                 f"exceed {limits.max_schema_number:g} (max_schema_number)",
                                 "max_schema_number", where)
    ref = node.get("$ref")
    if ref is not None and (not isinstance(ref, str) or not ref.startswith("#")):
        raise BudgetExceeded("only local '$ref's ('#/...') are allowed", "remote_ref",
                             f"{path}.$ref")
    pattern = node.get("pattern")
    if pattern is not None:
        check_pattern(pattern, limits, field=f"{path}.pattern")


def check_pattern(pattern: Any, limits: GrammarLimits = DEFAULT_LIMITS, *,
                  field: str = "pattern") -> None:
    """Check a schema ``pattern``: its length and how far its repetitions expand.

    The expansion is estimated as the converter performs it: each atom counts one, a
    ``{m,n}`` multiplies what it follows by ``max(m, n)``, ``*``/``+``/``?`` by two.

    Raises:
        BudgetExceeded: the pattern is too long or expands too far.
    """
    if not isinstance(pattern, str):
        raise BudgetExceeded("'pattern' must be a string", "type", field)
    if len(pattern) > limits.max_pattern_chars:
        raise BudgetExceeded(f"the pattern is {len(pattern)} characters; the limit "
                             f"(max_pattern_chars) is {limits.max_pattern_chars}",
                             "max_pattern_chars", field)
    groups: list[int] = [0]  # size so far of each open group
    last = 0  # size of the atom or group a quantifier would apply to
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            last = 1
            groups[-1] += 1
            continue
        if c == "[":
            j = i + 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            last = 1
            groups[-1] += 1
            continue
        if c == "(":
            if len(groups) > limits.max_schema_depth:
                raise BudgetExceeded(f"the pattern nests groups deeper than "
                                     f"{limits.max_schema_depth} (max_schema_depth)",
                                     "max_schema_depth", field)
            groups.append(0)
            i += 1
            continue
        if c == ")" and len(groups) > 1:
            last = groups.pop()
            groups[-1] += last
            i += 1
            continue
        times = 0
        if c == "{":
            m = _QUANTIFIER.match(pattern, i)
            if m:
                lo, hi = (int(g) if g else 0 for g in m.groups())
                times = max(lo, hi)
                if times > limits.max_schema_bound:
                    raise BudgetExceeded(f"a repetition of {times} in the pattern is over "
                                         f"the limit of {limits.max_schema_bound} "
                                         "(max_schema_bound)", "max_schema_bound", field)
                i = m.end()
        elif c in "*+?":
            times = 2
            i += 1
        if times:
            groups[-1] += last * (times - 1)
            last *= times
        else:
            last = 1
            groups[-1] += 1
            i += 1
        if groups[-1] > limits.max_pattern_expansion or last > limits.max_pattern_expansion:
            raise BudgetExceeded(f"the pattern's repetitions expand past "
                                 f"{limits.max_pattern_expansion} (max_pattern_expansion)",
                                 "max_pattern_expansion", field)
