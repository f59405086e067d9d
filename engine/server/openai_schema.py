"""OpenAI API requests: bodies parsed and checked into the engine's types.

Everything here is pure (no I/O): the HTTP layer hands in decoded JSON and gets back a
:class:`ParsedRequest` or an :class:`ApiError` carrying the status code and the
OpenAI-style error document. Extra keys the API does not name (``top_k``, ``min_p``,
``repeat_penalty``, ``grammar``, ``loop_guard``, ``cache_prompt``) are accepted as
llama.cpp's server does; ``logprobs`` / ``top_logprobs`` (chat), ``logprobs: 0..5`` with
``echo`` (completions; ``max_tokens: 0`` with both scores the prompt alone) and
``logit_bias`` are checked here, and ``speculative: {"mode": "off"|"ngram"|"draft"|"mtp",
"draft_tokens": N}`` chooses speculative decoding for the request (among the modes the
served engine has loaded).
The response documents are built in :mod:`engine.server.openai_responses`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.requests import GenerationRequest, SamplingParams
from engine.server import grammar as gbnf
from engine.server import request_model as rm
from engine.server import tools as toolcalls
from engine.server.chat_messages import chat_messages, chat_tools
from engine.server.chat_prefill import prefill
from engine.server.errors import ApiError, bad
from engine.server.grammar_budget import BudgetExceeded, check_gbnf
from engine.speculative import SPEC_MODES

log = logging.getLogger(__name__)

__all__ = ["ApiError", "ParsedRequest", "ServedModel", "bad", "parse_chat",
           "parse_completion"]

MAX_STOP_SEQUENCES = rm.DEFAULT_REQUEST_LIMITS.max_stop_sequences
MAX_DRAFT_TOKENS = 64
MAX_TOP_LOGPROBS = 20  # chat's top_logprobs (OpenAI's limit)
MAX_COMPLETION_LOGPROBS = 5  # the completions API's logprobs (OpenAI's limit)
MAX_LOGIT_BIAS = 1024  # entries of one logit_bias map
LOOP_GUARD_MODES = ("stop", "retry", "off")
# a logit_bias ban (-100) while a grammar applies: the lowest bias the sampler keeps finite
GRAMMAR_BAN_BIAS = -99.0
@dataclass(frozen=True)
class ServedModel:
    """What the server knows about the model it serves, for parsing requests.

    Attributes:
        id: the model id shown by ``/v1/models`` and echoed in responses.
        aliases: other names accepted in the ``model`` field (file name, ``demo`` ...).
        n_ctx_per_seq: the context of one sequence, the default cap of ``max_tokens``.
        template_tools: the chat template renders ``tools`` itself.
        spec_modes: the speculation modes a request may choose.
        spec_refusal: why this model cannot speculate at all (None when it can).
        vision_refusal: why requests with images are refused (None: the model takes them).
        created: the Unix time shown for the model.
        n_vocab: the vocabulary size, the bound of ``logit_bias`` token ids (None: not
            known, the engine checks them).
        lenient: any ``model`` name, or none, is served by this model (one model served,
            as llama-server does); a router's models are strict.
        tags: labels listed with the model (llama-server's ``--tags``).
        alias_names: the names given with ``--alias``, listed as ``aliases``.
    """

    id: str
    aliases: frozenset[str] = frozenset()
    n_ctx_per_seq: int = 4096
    template_tools: bool = False
    spec_modes: tuple[str, ...] = ("off", "ngram")
    spec_refusal: str | None = None
    vision_refusal: str | None = "the model was loaded without a vision projector (mmproj)"
    created: int = field(default_factory=lambda: int(time.time()))
    n_vocab: int | None = None
    lenient: bool = False
    tags: tuple[str, ...] = ()
    alias_names: tuple[str, ...] = ()

    def accepts(self, name: str) -> bool:
        return self.lenient or name == self.id or name in self.aliases


@dataclass(frozen=True)
class ParsedRequest:
    """A checked request, ready for the engine.

    Attributes:
        generation: what the engine is asked to do.
        stream: answer with server-sent events.
        include_usage: streaming only: send a last chunk with ``usage``.
        tools: the tools whose calls are looked for in the answer (empty: none).
        echo: completions only: prepend the prompt to the answer.
        user_grammar: the grammar comes from the request (a GBNF ``grammar``, a JSON
            schema or forced tools), so a grammar the engine refuses is the client's
            error, 400, not the server's.
        grammar_field: the request field the grammar came from (named in errors).
        n: chat only: the choices asked (each generated on its own slot).
        verbose: chat only: the answer carries its rendered prompt (``__verbose``).
    """

    generation: GenerationRequest
    stream: bool = False
    include_usage: bool = False
    tools: tuple[Mapping[str, Any], ...] = ()
    echo: bool = False
    user_grammar: bool = False
    grammar_field: str = "grammar"
    n: int = 1
    verbose: bool = False


# ---------------------------------------------------------------- field readers


def _number(body: Mapping[str, Any], name: str, lo: float, hi: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if not rm.is_finite(value):
        raise bad(f"'{name}' must be a number", name, "invalid_type")
    if not lo <= value <= hi:
        raise bad(f"'{name}' must be between {lo:g} and {hi:g}, not {rm.shown(value)}", name)
    return float(value)


def _integer(body: Mapping[str, Any], name: str, lo: int, hi: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise bad(f"'{name}' must be an integer", name, "invalid_type")
    if value < lo or (hi is not None and value > hi):
        upper = f" and at most {hi}" if hi is not None else ""
        raise bad(f"'{name}' must be at least {lo}{upper}, not {rm.shown(value)}", name)
    return int(value)


def boolean(body: Mapping[str, Any], name: str, default: bool = False) -> bool:
    """``body[name]`` as a bool (absent or null: ``default``), else a 400 naming it."""
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad(f"'{name}' must be true or false", name, "invalid_type")
    return value


def check_model(body: Mapping[str, Any], model: ServedModel) -> None:
    """The body's ``model`` names ``model`` (one of its names), else a 400 or 404."""
    name = body.get("model")
    if name is None and model.lenient:
        return
    if name is None:
        raise bad("'model' is required", "model", "missing_required_parameter")
    if not isinstance(name, str):
        raise bad("'model' must be a string", "model", "invalid_type")
    if not model.accepts(name):
        raise ApiError(404, f"the model '{rm.shown(name, 80)}' does not exist; this server serves "
                            f"'{model.id}'", param="model", code="model_not_found")


def _stops(body: Mapping[str, Any]) -> tuple[str, ...]:
    value = body.get("stop")
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise bad("'stop' must be a string or a list of strings", "stop", "invalid_type")
    return tuple(s for s in items if s)


MAX_CHOICES = 8  # a chat request's n: choices answered side by side, each on its slot


def _unsupported(body: Mapping[str, Any], most_choices: int = 1) -> int:
    """Refuse what is not supported; returns ``n``, the number of choices asked."""
    n = _integer(body, "n", 1) or 1
    if n > most_choices:
        raise bad(f"n must be at most {most_choices} here" if most_choices > 1
                  else "only n=1 is supported", "n", "unsupported_value")
    if n > 1 and boolean(body, "stream"):
        raise bad("a streamed answer has one choice (n=1)", "n", "unsupported_value")
    best_of = _integer(body, "best_of", 1)
    if best_of is not None and best_of != 1:
        raise bad("only best_of=1 is supported", "best_of", "unsupported_value")
    if body.get("suffix") not in (None, ""):
        raise bad("suffix is not supported", "suffix", "unsupported_value")
    return n


def _chat_logprobs(body: Mapping[str, Any]) -> dict[str, Any]:
    """``logprobs: true`` and ``top_logprobs: 0..20`` of a chat request."""
    asked = boolean(body, "logprobs")
    top = _integer(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    if top is not None and not asked:
        raise bad("'top_logprobs' needs 'logprobs': true", "top_logprobs")
    return {"logprobs": top or 0} if asked else {}


def _completion_logprobs(body: Mapping[str, Any], echo: bool) -> dict[str, Any]:
    """``logprobs: 0..5`` of a completions request; with ``echo``, the prompt is scored."""
    value = body.get("logprobs")
    if isinstance(value, bool):
        raise bad(f"'logprobs' must be an integer from 0 to {MAX_COMPLETION_LOGPROBS} "
                  "(the number of most likely tokens to list)", "logprobs", "invalid_type")
    n = _integer(body, "logprobs", 0, MAX_COMPLETION_LOGPROBS)
    if n is None:
        return {}
    return {"logprobs": n, "prompt_logprobs": echo}


def _logit_bias(body: Mapping[str, Any], model: ServedModel, grammar: bool = False
                ) -> dict[str, Any]:
    """``logit_bias``: a map of token id (a string of digits) to a bias in -100..100.

    A bias of -100 bans its token. With a grammar, a ban is :data:`GRAMMAR_BAN_BIAS`
    instead: llama.cpp aborts the whole process when no token is left to sample, which
    bans of every token the grammar allows would cause, so there the grammar wins.
    """
    raw = body.get("logit_bias")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise bad("'logit_bias' must be an object mapping token ids to numbers",
                  "logit_bias", "invalid_type")
    if len(raw) > MAX_LOGIT_BIAS:
        raise bad(f"'logit_bias' may name at most {MAX_LOGIT_BIAS} tokens, not {len(raw)}",
                  "logit_bias")
    out: list[tuple[int, float]] = []
    for key, value in raw.items():
        text = str(key).strip()
        if not text.isascii() or not text.isdigit() or len(text) > 12:
            raise bad(f"'logit_bias' keys must be token ids (non-negative integers), not "
                      f"{str(key)[:40]!r}", "logit_bias", "invalid_value")
        token = int(text)
        if model.n_vocab is not None and token >= model.n_vocab:
            raise bad(f"'logit_bias' names token {token}, but the vocabulary has "
                      f"{model.n_vocab} tokens (0..{model.n_vocab - 1})", "logit_bias",
                      "invalid_value")
        if not rm.is_finite(value) or not -100 <= value <= 100:
            raise bad(f"'logit_bias' values must be numbers from -100 to 100 (token {text} "
                      f"has {rm.shown(value)})", "logit_bias", "invalid_value")
        out.append((token, max(float(value), GRAMMAR_BAN_BIAS) if grammar else float(value)))
    banned = {t for t, bias in out if bias <= -100}
    if model.n_vocab is not None and len(banned) >= model.n_vocab:
        raise bad("'logit_bias' bans every token of the vocabulary; nothing would be left to "
                  "generate", "logit_bias", "invalid_value")
    return {"logit_bias": tuple(out)} if out else {}


def _sampling(body: Mapping[str, Any], model: ServedModel, grammar: str | None,
              limits: rm.RequestLimits, extra: Mapping[str, Any] | None = None
              ) -> SamplingParams:
    """The sampling parameters named in ``body`` (and ``extra``, already checked); engine
    defaults for the rest."""
    base = SamplingParams(**limits.sampling_defaults)
    extra = extra or {}
    scoring = bool(extra.get("prompt_logprobs"))
    max_tokens = _integer(body, "max_completion_tokens", 1, limits.max_tokens)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", 0 if scoring else 1, limits.max_tokens)
    if max_tokens is None:
        # until the context is full, as OpenAI does (or the server's cap)
        max_tokens = min(model.n_ctx_per_seq, limits.max_tokens)
    if limits.cap_tokens is not None:
        max_tokens = min(max_tokens, limits.cap_tokens)
    values: dict[str, Any] = {"max_tokens": max_tokens, "stop": _stops(body)}
    for name, lo, hi in (("temperature", 0.0, 2.0), ("top_p", 0.0, 1.0),
                         ("min_p", 0.0, 1.0), ("presence_penalty", -2.0, 2.0),
                         ("frequency_penalty", -2.0, 2.0), ("repeat_penalty", 1e-6, 10.0)):
        number = _number(body, name, lo, hi)
        if number is not None:
            values[name] = number
    top_k = _integer(body, "top_k", 0)
    if top_k is not None:
        values["top_k"] = top_k
    seed = body.get("seed")
    if seed is not None:
        values["seed"] = _integer(body, "seed", -(2**63), 2**64 - 1)
    guard = body.get("loop_guard")
    if guard is not None:
        if guard not in LOOP_GUARD_MODES:
            raise bad(f"'loop_guard' must be one of {', '.join(LOOP_GUARD_MODES)}",
                      "loop_guard")
        values["loop_guard"] = guard
    cache_prompt = body.get("cache_prompt")
    if cache_prompt is not None:
        if not isinstance(cache_prompt, bool):
            raise bad("'cache_prompt' must be true or false", "cache_prompt", "invalid_type")
        values["cache_prompt"] = cache_prompt
    extra_grammar = body.get("grammar")
    if extra_grammar is not None:
        if not isinstance(extra_grammar, str) or not extra_grammar.strip():
            raise bad("'grammar' must be a GBNF text", "grammar", "invalid_type")
        if grammar is not None:
            raise bad("'grammar' cannot be combined with response_format or forced tools",
                      "grammar")
        try:
            check_gbnf(extra_grammar, limits.grammar, field="grammar", n_vocab=model.n_vocab)
        except BudgetExceeded as exc:
            raise over_budget(exc) from exc
        grammar = extra_grammar
    values["grammar"] = grammar
    values.update(_speculative(body, model))
    values.update(_logit_bias(body, model, grammar is not None))
    values.update(extra)
    return SamplingParams(**{**base.__dict__, **values})


def _speculative(body: Mapping[str, Any], model: ServedModel) -> dict[str, Any]:
    """``spec_mode`` / ``draft_tokens`` from the ``speculative`` object, checked."""
    spec = body.get("speculative")
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise bad("'speculative' must be an object with a 'mode'", "speculative",
                  "invalid_type")
    unknown = set(spec) - {"mode", "draft_tokens"}
    if unknown:
        raise bad(f"'speculative' takes 'mode' and 'draft_tokens', not "
                  f"{', '.join(sorted(map(str, unknown)))}", "speculative")
    values: dict[str, Any] = {}
    mode = spec.get("mode")
    if mode is not None:
        if mode not in SPEC_MODES:
            raise bad(f"'speculative.mode' must be one of {', '.join(SPEC_MODES)}",
                      "speculative.mode")
        if mode != "off" and model.spec_refusal is not None:
            raise bad(f"this model cannot speculate: {model.spec_refusal}",
                      "speculative.mode", "unsupported_value")
        if mode not in model.spec_modes:
            raise bad(f"speculative mode '{mode}' is not loaded on this server (it has: "
                      f"{', '.join(model.spec_modes)})", "speculative.mode",
                      "unsupported_value")
        values["spec_mode"] = mode
    draft = _integer(spec, "draft_tokens", 0, MAX_DRAFT_TOKENS)
    if draft is not None:
        values["draft_tokens"] = draft
    return values


def over_budget(exc: BudgetExceeded) -> ApiError:
    """The 400 for a grammar or schema over the budget (names the limit and the field)."""
    code = "invalid_grammar" if exc.limit == "empty_element" else "grammar_too_large"
    return bad(f"{exc} (at {exc.field})", exc.field, code)


def _response_format_grammar(body: Mapping[str, Any], limits: rm.RequestLimits
                             ) -> str | None:
    fmt = body.get("response_format")
    if fmt is None and body.get("json_schema") is not None:
        # llama-server's own field: the schema itself, at the top level
        fmt = {"type": "json_schema", "json_schema": {"schema": body["json_schema"]}}
    if fmt is None:
        return None
    if not isinstance(fmt, Mapping) or not isinstance(fmt.get("type"), str):
        raise bad("'response_format' must be an object with a 'type'", "response_format",
                  "invalid_type")
    kind = fmt["type"]
    try:
        if kind == "text":
            return None
        if kind == "json_object" and fmt.get("schema") is not None:
            # llama-server's form: json_object with a schema is that schema
            fmt = {"type": "json_schema", "json_schema": {"schema": fmt["schema"]}}
            kind = "json_schema"
        if kind == "json_object":
            return gbnf.json_object_gbnf()
        if kind == "json_schema":
            spec = fmt.get("json_schema")
            if not isinstance(spec, Mapping):
                raise bad("'response_format.json_schema' must be an object",
                          "response_format.json_schema", "invalid_type")
            schema = spec.get("schema", {"type": "object"})
            if not isinstance(schema, Mapping):
                raise bad("'response_format.json_schema.schema' must be an object",
                          "response_format.json_schema.schema", "invalid_type")
            return gbnf.schema_to_gbnf(schema, limits=limits.grammar,
                                       field="response_format.json_schema.schema")
    except BudgetExceeded as exc:
        raise over_budget(exc) from exc
    except gbnf.SchemaNotSupported as exc:
        raise bad(str(exc), "response_format.json_schema.schema",
                  "unsupported_schema") from exc
    raise bad(f"unknown response_format type '{kind}' (text, json_object or json_schema)",
              "response_format.type")


# ---------------------------------------------------------------- chat


def _grammar_field(body: Mapping[str, Any], forced_tools: bool) -> str:
    if body.get("grammar") is not None:
        return "grammar"
    return "tools" if forced_tools else "response_format"


def parse_chat(body: Any, model: ServedModel,
               limits: rm.RequestLimits = rm.DEFAULT_REQUEST_LIMITS) -> ParsedRequest:
    """Check a ``/v1/chat/completions`` body and turn it into an engine request.

    Raises:
        ApiError: the body is not a valid request for this server (4xx).
    """
    body = rm.check_body(body, rm.CHAT_FIELDS, limits)
    check_model(body, model)
    n_choices = _unsupported(body, MAX_CHOICES)
    images: list[bytes] = []
    messages = chat_messages(body, images, limits.images)
    if images and model.vision_refusal is not None:
        raise bad(f"this model cannot take images: {model.vision_refusal}", "messages",
                  "images_not_supported")
    tools, choice = chat_tools(body)
    stream = boolean(body, "stream")
    grammar = _response_format_grammar(body, limits)
    template_tools: tuple[Mapping[str, Any], ...] | None = None
    if tools and choice != "none":
        forced = choice is not None  # "required" or a named function
        if forced:
            if grammar is not None:
                raise bad("a forced tool call cannot be combined with response_format",
                          "tool_choice")
            try:
                grammar = gbnf.tool_call_gbnf(tools, None if choice == "required" else choice,
                                              limits.grammar)
            except BudgetExceeded as exc:
                raise over_budget(exc) from exc
            except gbnf.SchemaNotSupported as exc:
                raise bad(str(exc), "tools", "unsupported_schema") from exc
        if model.template_tools:
            template_tools = tools
        else:
            offered = tools if choice in (None, "required") else \
                tuple(t for t in tools if t["function"]["name"] == choice)
            messages = toolcalls.with_fallback_tools(messages, offered, forced)
    stream_options = body.get("stream_options")
    include_usage = False
    if stream_options is not None:
        if not isinstance(stream_options, Mapping):
            raise bad("'stream_options' must be an object", "stream_options", "invalid_type")
        include_usage = boolean(stream_options, "include_usage")
    params = _sampling(body, model, grammar, limits, _chat_logprobs(body))
    messages, prefix = prefill(messages, boolean(body, "continue_final_message"),
                               boolean(body, "add_generation_prompt", False))
    generation = GenerationRequest(messages=messages, tools=template_tools, params=params,
                                   images=tuple(images), assistant_prefix=prefix)
    return ParsedRequest(generation=generation, stream=stream, include_usage=include_usage,
                         n=n_choices, verbose=boolean(body, "verbose", limits.echo_prompt),
                         tools=tools if choice != "none" else (),
                         user_grammar=params.grammar is not None,
                         grammar_field=_grammar_field(
                             body, bool(tools) and choice not in (None, "none")))


# ---------------------------------------------------------------- completions


def _token_ids(prompt: list[Any], model: ServedModel) -> tuple[int, ...] | None:
    """A prompt given as token ids (as evaluation harnesses send it); None when ``prompt``
    is not a list of integers."""
    if not prompt or not all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        return None
    top = model.n_vocab
    bad_id = next((t for t in prompt if t < 0 or (top is not None and t >= top)), None)
    if bad_id is not None:
        limit = f" (0..{top - 1})" if top is not None else ""
        raise bad(f"'prompt' names token {str(bad_id)[:40]}, outside the vocabulary{limit}",
                  "prompt", "invalid_value")
    return tuple(prompt)


def parse_completion(body: Any, model: ServedModel,
                     limits: rm.RequestLimits = rm.DEFAULT_REQUEST_LIMITS) -> ParsedRequest:
    """Check a ``/v1/completions`` body and turn it into an engine request.

    Raises:
        ApiError: the body is not a valid request for this server (4xx).
    """
    body = rm.check_body(body, rm.COMPLETION_FIELDS, limits)
    check_model(body, model)
    _unsupported(body)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]
    if prompt is None:
        raise bad("'prompt' is required", "prompt", "missing_required_parameter")
    token_ids = _token_ids(prompt, model) if isinstance(prompt, list) else None
    if token_ids is None and not isinstance(prompt, str):
        raise bad("'prompt' must be a string or a list of token ids (one prompt per "
                  "request)", "prompt", "invalid_type")
    stream = boolean(body, "stream")
    echo = boolean(body, "echo")
    stream_options = body.get("stream_options")
    include_usage = isinstance(stream_options, Mapping) and \
        boolean(stream_options, "include_usage")
    if body.get("max_tokens") == 0 and not (echo and body.get("logprobs") is not None):
        raise bad("'max_tokens': 0 is only for scoring a prompt: send it with 'echo': true "
                  "and 'logprobs'", "max_tokens")
    params = _sampling(body, model, _response_format_grammar(body, limits), limits,
                       _completion_logprobs(body, echo))
    generation = GenerationRequest(prompt_tokens=token_ids, params=params) \
        if token_ids is not None else GenerationRequest(prompt=prompt, params=params)
    return ParsedRequest(generation=generation,
                         stream=stream, include_usage=include_usage, echo=echo,
                         user_grammar=params.grammar is not None,
                         grammar_field=_grammar_field(body, False))
