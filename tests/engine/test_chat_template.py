"""Chat templates from the GGUF, rendered in a sandboxed Jinja environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.chat_template import render_chat
from engine.errors import ChatTemplateError
from engine.launch import LaunchSpec
from engine.runtime import Engine

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]


def test_no_template_falls_back_to_chatml() -> None:
    text = render_chat(None, MESSAGES)
    assert text == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                    "<|im_start|>assistant\n")
    assert not render_chat(None, MESSAGES, add_generation_prompt=False).endswith("assistant\n")


def test_template_can_refuse_messages() -> None:
    template = ("{% if messages[0]['role'] != 'user' %}"
                "{{ raise_exception('user first') }}{% endif %}")
    with pytest.raises(ChatTemplateError, match="user first"):
        render_chat(template, MESSAGES)


def test_template_cannot_reach_python_internals() -> None:
    template = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
    with pytest.raises(ChatTemplateError):
        render_chat(template, MESSAGES)


def test_template_cannot_mutate_the_callers_messages() -> None:
    template = "{% set _ = messages.append({'role': 'x'}) %}{{ messages | length }}"
    messages = list(MESSAGES)
    with pytest.raises(ChatTemplateError):
        render_chat(template, messages)
    assert len(messages) == 2


def test_tools_are_available_as_json() -> None:
    template = "{% for t in tools %}{{ t | tojson }}{% endfor %}"
    tools = [{"type": "function", "function": {"name": "météo"}}]
    assert render_chat(template, MESSAGES, tools=tools) == \
        '{"type": "function", "function": {"name": "météo"}}'


def test_broken_template_is_a_clear_error() -> None:
    with pytest.raises(ChatTemplateError, match="does not parse"):
        render_chat("{% for m in messages %}", MESSAGES)


@pytest.mark.slow
def test_engine_renders_the_gguf_template(llama_gguf: Path) -> None:
    with Engine(LaunchSpec(str(llama_gguf), n_threads=1, n_ctx=256)) as eng:
        text = eng.render_chat(MESSAGES)
    # the synthetic model's own template, not ChatML
    assert text == "<|system|>Be brief.</s><|user|>Hi</s><|assistant|>"
