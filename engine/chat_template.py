"""Render a GGUF's ``tokenizer.chat_template`` (Jinja) in a sandbox.

Templates come from downloaded files, so they run in Jinja's immutable sandbox: no
attribute access to internals, no mutation of the caller's messages. The helpers that
Hugging Face templates expect (``raise_exception``, ``strftime_now``, ``tojson``) exist.
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.errors import ChatTemplateError

log = logging.getLogger(__name__)

# Used when a GGUF carries no template (ChatML, the most common convention).
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _raise_exception(message: str) -> None:
    raise ChatTemplateError(f"the chat template refused the messages: {message}")


def _strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(fmt)


def _tojson(value: Any, indent: int | None = None, ensure_ascii: bool = False,
            **_: Any) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)


@lru_cache(maxsize=16)
def _compile(source: str) -> Any:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    try:
        return env.from_string(source)
    except TemplateError as exc:
        raise ChatTemplateError(f"the chat template does not parse: {exc}") from exc


def render_chat(template: str | None, messages: Sequence[Mapping[str, Any]], *,
                tools: Sequence[Mapping[str, Any]] | None = None,
                add_generation_prompt: bool = True, bos_token: str = "",
                eos_token: str = "") -> str:
    """Render ``messages`` with ``template`` (ChatML when None).

    Raises:
        ChatTemplateError: the template does not parse, fails, or calls raise_exception.
    """
    compiled = _compile(template or CHATML)
    try:
        return str(compiled.render(
            messages=[dict(m) for m in messages],
            tools=[dict(t) for t in tools] if tools else None,
            add_generation_prompt=add_generation_prompt,
            bos_token=bos_token, eos_token=eos_token,
        ))
    except ChatTemplateError:
        raise
    except Exception as exc:  # a broken template may raise anything
        raise ChatTemplateError(f"the chat template failed: {type(exc).__name__}: {exc}") \
            from exc
