"""The part of the engine the server's routes and its router rely on.

Apart from :mod:`engine.server.state` so that the router (which state refers to) can use it
without importing state back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from engine.requests import GenerationRequest, RequestHandle
from engine.server import tools as toolcalls

log = logging.getLogger(__name__)

RETRY_AFTER_S = "1"


class EngineLike(Protocol):
    """The part of :class:`engine.runtime.Engine` the server uses."""

    def submit(self, request: GenerationRequest) -> RequestHandle: ...
    def render_chat(self, messages: Sequence[Mapping[str, Any]],
                    tools: Sequence[Mapping[str, Any]] | None = None,
                    add_generation_prompt: bool = True) -> str: ...
    def status(self) -> dict[str, Any]: ...
    @property
    def model_name(self) -> str: ...
    @property
    def n_ctx_per_seq(self) -> int: ...
    @property
    def speculation_modes(self) -> tuple[str, ...]: ...
    speculation_refusal: str | None


def template_renders_tools(engine: EngineLike) -> bool:
    """Whether the model's chat template shows declared tools to the model."""
    try:
        text = engine.render_chat([{"role": "user", "content": "hi"}],
                                  tools=toolcalls.probe_tools())
    except Exception:  # a template that chokes on tools does not support them
        log.debug("chat template failed with tools", exc_info=True)
        return False
    return toolcalls.PROBE_TOOL_NAME in text
