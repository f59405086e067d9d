"""``POST /infill``: fill in the middle, for code editors (llama-server's route).

The body carries the code before the cursor (``input_prefix``), after it
(``input_suffix``), the start of the line being typed (``prompt``) and other files for
context (``input_extra``: ``[{"filename", "text"}]``). They are laid out with the model's
own fill-in-the-middle tokens:

    [file separator] name \\n text ...  (each extra file, when the model has the token)
    <prefix> input_prefix <suffix> input_suffix <middle> prompt

and the answer continues from there, as a native ``/completion`` answers. A model without
the prefix, suffix and middle tokens is refused (400), with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.server.errors import bad

MAX_EXTRA = 64  # files of context in one request
INFILL_ONLY = ("input_prefix", "input_suffix", "input_extra")


@dataclass(frozen=True)
class FimTokens:
    """The model's fill-in-the-middle tokens (-1: the model has none)."""

    prefix: int
    suffix: int
    middle: int
    separator: int = -1

    @property
    def usable(self) -> bool:
        return min(self.prefix, self.suffix, self.middle) >= 0


def fim_tokens(engine: Any) -> FimTokens:
    """The FIM tokens of the engine's model (all -1 when it cannot say)."""
    from engine.native.model import llama

    model = getattr(engine, "native_model", None)
    if model is None:
        return FimTokens(-1, -1, -1)
    lib, vocab = llama(), model.vocab

    def token(name: str) -> int:
        fn = getattr(lib, f"llama_vocab_fim_{name}", None)
        return int(fn(vocab)) if fn is not None else -1

    return FimTokens(token("pre"), token("suf"), token("mid"), token("sep"))


def _text(body: Mapping[str, Any], name: str) -> str:
    value = body.get(name, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise bad(f"'{name}' must be a string", name, "invalid_type")
    return value


def _extra(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    value = body.get("input_extra")
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad("'input_extra' must be a list of {\"filename\": ..., \"text\": ...}",
                  "input_extra", "invalid_type")
    if len(value) > MAX_EXTRA:
        raise bad(f"'input_extra' holds at most {MAX_EXTRA} files", "input_extra")
    out = []
    for i, item in enumerate(value):
        where = f"input_extra[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("filename"), str) \
                or not isinstance(item.get("text"), str):
            raise bad(f"'{where}' must be {{\"filename\": string, \"text\": string}}", where,
                      "invalid_type")
        out.append((item["filename"], item["text"]))
    return out


def infill_prompt(body: Any, fim: FimTokens, tokenize: Any) -> list[int]:
    """The prompt's token ids for ``body`` (checked).

    Raises:
        ApiError: a field of the wrong shape, or a model without FIM tokens (400).
    """
    if not isinstance(body, Mapping):
        raise bad("the request body must be a JSON object", code="invalid_json")
    prefix, suffix = _text(body, "input_prefix"), _text(body, "input_suffix")
    prompt, extra = _text(body, "prompt"), _extra(body)
    if not fim.usable:
        raise bad("this model has no fill-in-the-middle tokens; /infill needs a code model "
                  "trained for it", "model", "infill_not_supported")
    tokens: list[int] = []
    for name, text in extra:
        if fim.separator >= 0:
            tokens += [fim.separator, *tokenize(f"{name}\n{text}")]
        else:
            tokens += tokenize(f"{text}\n")
    tokens += [fim.prefix, *tokenize(prefix), fim.suffix, *tokenize(suffix)]
    return [*tokens, fim.middle, *tokenize(prompt)]
