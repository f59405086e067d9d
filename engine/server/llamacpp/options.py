"""What llama-server's flags ask of the server, beside Loadout's own options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LlamaOptions:
    """llama-server's switches and defaults, as ``loadout serve`` was given them.

    Attributes:
        slots_endpoint: ``GET /slots`` answers (``--no-slots``: 501, as llama-server).
        metrics: ``GET /metrics`` answers (``--no-metrics``: 501, as llama-server).
        tags: ``--tags``, listed with the model in ``/v1/models``.
        extra_hosts: the addresses of ``--host a,b`` after the first.
        ctx_total: ``-c``: the cache shared by all slots (None: not given).
        batch, ubatch: ``-b`` / ``-ub`` (None: the plan's).
        flash_attn: ``-fa on|off|auto`` (None: the plan's).
        kv_unified, swa_full: llama.cpp's cache options.
        chat_template: a Jinja chat template used instead of the GGUF's.
        context_shift: ``--context-shift`` was given (an overflowing answer still ends).
        pooling: ``--pooling`` as given (see docs/server.md).
        defaults: sampling defaults of requests that name none (``temperature``, ``seed``).
        aliases: the ``--alias`` names, listed as the model's ``aliases``.
    """

    slots_endpoint: bool = True
    metrics: bool = True
    tags: tuple[str, ...] = ()
    extra_hosts: tuple[str, ...] = ()
    ctx_total: int | None = None
    batch: int | None = None
    ubatch: int | None = None
    flash_attn: str | None = None
    kv_unified: bool = False
    swa_full: bool = False
    chat_template: str | None = None
    context_shift: bool = False
    pooling: str | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()


DEFAULT_LLAMA_OPTIONS = LlamaOptions()
