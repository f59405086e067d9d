"""A minimal streaming chat over llama-cpp-python's ``Llama`` class, with our metrics.

Used by ``loadout chat`` and the self-test until the planned engine carries out a full
LaunchSpec; it measures with the same :class:`engine.metrics.RequestTimer`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.errors import ModelLoadError
from engine.logs import route_native_log
from engine.metrics import Metrics, RequestTimer

log = logging.getLogger(__name__)


class QuickChat:
    """A conversation with one model loaded on the CPU (or all layers on a GPU build)."""

    def __init__(self, path: Path, n_ctx: int = 4096, system: str | None = None,
                 n_threads: int | None = None) -> None:
        route_native_log()
        from llama_cpp import Llama

        try:
            self._llama = Llama(str(path), n_ctx=n_ctx, n_gpu_layers=-1, verbose=False,
                                n_threads=n_threads or max(1, (os.cpu_count() or 2)))
        except (ValueError, RuntimeError) as exc:
            raise ModelLoadError(f"llama.cpp could not load {path}: {exc}") from exc
        self.messages: list[dict[str, str]] = []
        if system:
            self.messages.append({"role": "system", "content": system})
        self.last_metrics: Metrics | None = None

    def ask(self, text: str, max_tokens: int = 512, temperature: float = 0.7) -> Iterator[str]:
        """Stream the answer to ``text``; the figures land in :attr:`last_metrics`."""
        self.messages.append({"role": "user", "content": text})
        timer = RequestTimer()
        answer: list[str] = []
        stream: Any = self._llama.create_chat_completion(
            self.messages,  # type: ignore[arg-type]
            max_tokens=max_tokens, temperature=temperature, stream=True)
        for chunk in stream:
            delta = chunk["choices"][0]["delta"].get("content")
            if delta:
                timer.token()
                answer.append(delta)
                yield delta
        timer.prompt_tokens = self._llama.n_tokens - timer.generated_tokens
        self.messages.append({"role": "assistant", "content": "".join(answer)})
        self.last_metrics = timer.snapshot()

    def last_speed_line(self) -> str:
        return self.last_metrics.speed_line() if self.last_metrics else ""
