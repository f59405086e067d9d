"""A llama-server ``/completion`` body turned into the OpenAI completion request it means.

llama-server's names map onto the OpenAI routes' fields (``n_predict`` is ``max_tokens``,
``json_schema`` a ``response_format``, a ``logit_bias`` of ``[token or text, bias]``
pairs a map of token ids); :func:`openai_bodies` then hands each prompt to the same parser
and limits as ``/v1/completions``. What has no OpenAI field (``n_probs``,
``return_tokens``, ``response_fields`` ...) is read into :class:`NativeOptions`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.server.errors import bad
from engine.server.openai_schema import MAX_TOP_LOGPROBS, ServedModel, boolean
from engine.server.request_model import shown

# fields whose name and meaning are the OpenAI completion request's
SAME_FIELDS = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty",
               "frequency_penalty", "seed", "stop", "grammar", "json_schema",
               "response_format", "cache_prompt", "loop_guard", "speculative", "model")
PROMPT_STRING = "prompt_string"
MULTIMODAL = "multimodal_data"
MAX_PROMPTS = 64  # prompts in one /completion request (llama-server answers each)

Tokenize = Callable[[str], list[int]]


@dataclass(frozen=True)
class NativeOptions:
    """What a native request asks beyond the OpenAI fields."""

    stream: bool = False
    n_probs: int = 0
    post_sampling_probs: bool = False
    return_tokens: bool = False
    response_fields: tuple[str, ...] = ()
    timings_per_token: bool = False
    return_progress: bool = False
    ignore_eos: bool = False
    id_slot: int = -1
    n_predict: int = -1


def native_options(body: Mapping[str, Any], n_slots: int) -> NativeOptions:
    """The native-only fields of ``body``, checked.

    Raises:
        ApiError: a field of the wrong type or out of range (400).
    """
    n_probs = _int(body, "n_probs", 0, MAX_TOP_LOGPROBS)
    id_slot = _int(body, "id_slot", -1, max(0, n_slots - 1))
    n_predict = _int(body, "n_predict", -1, 1 << 31)
    fields = body.get("response_fields")
    if fields is not None and (not isinstance(fields, list)
                               or not all(isinstance(f, str) for f in fields)):
        raise bad("'response_fields' must be a list of field names", "response_fields",
                  "invalid_type")
    return NativeOptions(stream=boolean(body, "stream"), n_probs=n_probs or 0,
                         post_sampling_probs=boolean(body, "post_sampling_probs"),
                         return_tokens=boolean(body, "return_tokens"),
                         response_fields=tuple(fields or ()),
                         timings_per_token=boolean(body, "timings_per_token"),
                         return_progress=boolean(body, "return_progress"),
                         ignore_eos=boolean(body, "ignore_eos"),
                         id_slot=-1 if id_slot is None else id_slot,
                         n_predict=-1 if n_predict is None else n_predict)


def _int(body: Mapping[str, Any], name: str, lo: int, hi: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            (isinstance(value, float) and not value.is_integer()):
        raise bad(f"'{name}' must be an integer", name, "invalid_type")
    if not lo <= value <= hi:
        raise bad(f"'{name}' must be between {lo} and {hi}, not {shown(value)}", name)
    return int(value)


def prompts(body: Mapping[str, Any], model: ServedModel, tokenize: Tokenize
            ) -> tuple[list[str | list[int]], bool]:
    """The request's prompts, each a text or token ids, and whether the answer is a list
    (several prompts were sent).

    llama-server's forms: a text; token ids; ``{"prompt_string": text}``; a list mixing
    token ids and texts (one prompt, the texts tokenized in place); a list of those
    (several prompts).

    Raises:
        ApiError: a prompt of none of these forms, or one with images (400).
    """
    prompt = body.get("prompt")
    if prompt is None:
        raise bad("'prompt' is required", "prompt", "missing_required_parameter")
    if isinstance(prompt, list) and prompt and all(isinstance(p, str | list | Mapping)
                                                   for p in prompt):
        if len(prompt) > MAX_PROMPTS:
            raise bad(f"at most {MAX_PROMPTS} prompts per request", "prompt")
        return [_one(p, model, tokenize, f"prompt[{i}]") for i, p in enumerate(prompt)], \
            len(prompt) > 1
    return [_one(prompt, model, tokenize, "prompt")], False


def _one(prompt: Any, model: ServedModel, tokenize: Tokenize, where: str
         ) -> str | list[int]:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Mapping):
        if prompt.get(MULTIMODAL):
            refusal = model.vision_refusal or "send images through /v1/chat/completions"
            raise bad(f"this prompt carries images: {refusal}", f"{where}.{MULTIMODAL}",
                      "images_not_supported")
        text = prompt.get(PROMPT_STRING)
        if not isinstance(text, str):
            raise bad(f"'{where}.{PROMPT_STRING}' must be a string", where, "invalid_type")
        return text
    if isinstance(prompt, list) and prompt and all(
            isinstance(p, str) or (isinstance(p, int) and not isinstance(p, bool))
            for p in prompt):
        if all(isinstance(p, int) for p in prompt):
            return list(prompt)
        tokens: list[int] = []
        for part in prompt:
            tokens += tokenize(part) if isinstance(part, str) else [part]
        return tokens
    raise bad(f"'{where}' must be a text, token ids, a list of token ids and texts, or "
              f"{{\"{PROMPT_STRING}\": text}}", where, "invalid_type")


def logit_bias(value: Any, tokenize: Tokenize) -> dict[str, float]:
    """llama-server's ``logit_bias`` as the OpenAI map ``{"token id": bias}``: pairs
    ``[token id or text, bias or false]`` or a map keyed by token id or text (a text
    biases each of its tokens; ``false`` bans)."""
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, list):
        if not all(isinstance(p, list) and len(p) == 2 for p in value):
            raise bad("'logit_bias' pairs must be [token id or text, bias]", "logit_bias",
                      "invalid_type")
        pairs = [(p[0], p[1]) for p in value]
    else:
        raise bad("'logit_bias' must be a map or a list of [token, bias] pairs",
                  "logit_bias", "invalid_type")
    out: dict[str, float] = {}
    for key, bias in pairs:
        if bias is False:
            bias = -100.0
        if isinstance(bias, bool) or not isinstance(bias, int | float):
            raise bad("a 'logit_bias' bias must be a number or false", "logit_bias",
                      "invalid_type")
        if isinstance(key, int) and not isinstance(key, bool):
            ids = [key]
        elif isinstance(key, str) and key.isdigit():
            ids = [int(key)]
        elif isinstance(key, str):
            ids = tokenize(key)
        else:
            raise bad("a 'logit_bias' key must be a token id or a text", "logit_bias",
                      "invalid_type")
        for token in ids:
            out[str(token)] = float(bias)
    return out


def openai_bodies(body: Mapping[str, Any], model: ServedModel, tokenize: Tokenize,
                  opts: NativeOptions) -> tuple[list[dict[str, Any]], bool]:
    """One OpenAI ``/v1/completions`` body per prompt (never streamed: the native route
    streams in its own shape), and whether the answer is a list."""
    base: dict[str, Any] = {k: body[k] for k in SAME_FIELDS if body.get(k) is not None}
    if opts.n_predict >= 0:
        base["max_tokens"] = max(1, opts.n_predict)
    if body.get("logit_bias") is not None:
        base["logit_bias"] = logit_bias(body["logit_bias"], tokenize)
    texts, many = prompts(body, model, tokenize)
    return [{**base, "prompt": p} for p in texts], many
