"""Which engine serves a model: an embedding model gets an :class:`EmbeddingEngine`, a chat
model the continuous-batching :class:`~engine.runtime.Engine` (with an embedder beside it
when the user opted in).

An embedding model is one whose GGUF says so: ``<arch>.pooling_type`` is set, or
``<arch>.attention.causal`` is false (BERT and its kin). It has no chat: generation
requests are refused with :class:`~engine.errors.NotGenerativeError`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.embedder import Embedder
from engine.errors import ChatTemplateError, NotGenerativeError
from engine.gguf_file import file_read_at
from engine.launch import LaunchSpec
from engine.native.embeddings import POOLING_NAMES
from engine.native.model import NativeModel
from engine.native.tokens import Vocab
from engine.requests import GenerationRequest, RequestHandle

if TYPE_CHECKING:
    from engine.runtime import Engine

log = logging.getLogger(__name__)

CAUSAL_POOLING = "mean"  # how ``--embeddings`` pools a chat model's hidden states


@dataclass(frozen=True)
class EmbeddingKind:
    """What a GGUF's header says about embeddings.

    Attributes:
        architecture: ``general.architecture``.
        is_embedding_model: the model is made to embed (pooling declared, or non-causal).
        pooling: the declared pooling (``mean``, ``cls``, ``last``, ``none``, ``rank``), or
            None when the header declares none.
    """

    architecture: str
    is_embedding_model: bool
    pooling: str | None


def embedding_kind(model_path: str | Path) -> EmbeddingKind:
    """Read the header of a GGUF (its first shard) for its embedding metadata.

    Raises:
        OSError: the file cannot be read.
        planner.errors.GGUFError: the header cannot be parsed.
    """
    from planner.gguf import read_header

    path = Path(model_path)
    with open(path, "rb") as f:
        header = read_header(file_read_at(f), path.stat().st_size)
    meta = header.metadata
    arch = str(meta.get("general.architecture", ""))
    raw = meta.get(f"{arch}.pooling_type")
    pooling = POOLING_NAMES.get(raw, "unknown") if isinstance(raw, int) else None
    causal = meta.get(f"{arch}.attention.causal", True)
    return EmbeddingKind(arch, pooling is not None or causal is False, pooling)


def pooling_refusal(pooling: str | None) -> str | None:
    """Why a model with this declared pooling cannot give one vector per input (None: it
    can)."""
    if pooling in ("mean", "cls", "last"):
        return None
    if pooling == "none":
        return ("the model declares no pooling (pooling_type none): it gives a vector per "
                "token, not per input, and Loadout serves pooled embeddings only")
    if pooling == "rank":
        return "the model is a reranker (pooling_type rank), not an embedding model"
    return f"the model declares a pooling Loadout does not know ({pooling})"


class EmbeddingEngine:
    """A loaded embedding model: embeds, tokenizes, and refuses to generate.

    It has the server's engine interface (:class:`engine.server.state.EngineLike`) so that
    ``loadout serve`` serves it like any model; ``embedder`` is None (and
    ``embedding_refusal`` says why) when the model's pooling gives no vector per input.

    Raises (from the constructor):
        ModelNotFoundError, CorruptModelError, ModelLoadError, OutOfMemoryError,
        ModelLoadCancelled: as :class:`engine.runtime.Engine`.
    """

    speculation_refusal: str | None = "an embedding model generates no text"

    def __init__(self, spec: LaunchSpec, kind: EmbeddingKind, *, queue_size: int = 64,
                 progress: Callable[[float], bool] | None = None) -> None:
        t0 = time.perf_counter()
        self.spec = spec
        self._progress = 0.0

        def on_progress(value: float) -> bool:
            self._progress = value
            return progress(value) if progress is not None else True

        self._model = NativeModel(spec, on_progress)
        self._closed = threading.Lock()
        self._vocab = Vocab(self._model.vocab)
        self._name = self._model.meta("general.name") or Path(spec.model_path).stem
        self.embedding_refusal = pooling_refusal(kind.pooling)
        self.embedder: Embedder | None = None
        if self.embedding_refusal is None:
            try:
                self.embedder = Embedder(self._model, spec, pooling=None,
                                         max_input_tokens=self._model.n_ctx_train,
                                         queue_size=queue_size, warm_up=spec.warm_up)
            except BaseException:
                self._model.free()
                raise
        else:
            log.warning("%s: %s", self._name, self.embedding_refusal)
        self.load_seconds = time.perf_counter() - t0
        self.load_log: list[str] = self._model.load_log
        log.info("embedding engine ready: %s (%s pooling), loaded in %.2f s", self._name,
                 self.embedder.pooling if self.embedder else kind.pooling, self.load_seconds)

    @property
    def model_name(self) -> str:
        """The model's ``general.name`` (or its file name)."""
        return self._name

    @property
    def n_ctx_per_seq(self) -> int:
        """The longest input one embedding may have."""
        return self.embedder.max_input_tokens if self.embedder else self._model.n_ctx_train

    @property
    def speculation_modes(self) -> tuple[str, ...]:
        return ("off",)

    @property
    def chat_template(self) -> str | None:
        return None

    def render_chat(self, messages: Sequence[Mapping[str, Any]],
                    tools: Sequence[Mapping[str, Any]] | None = None,
                    add_generation_prompt: bool = True) -> str:
        raise ChatTemplateError("an embedding model has no chat template")

    def submit(self, request: GenerationRequest) -> RequestHandle:
        """Always refuses: an embedding model generates no text.

        Raises:
            NotGenerativeError: always.
        """
        raise NotGenerativeError("this is an embedding model: it answers /v1/embeddings, "
                                 "not chat or completions")

    def tokenize(self, text: str, add_special: bool = True) -> list[int]:
        """Token ids of ``text`` (special tokens in the text are parsed)."""
        return self._vocab.tokenize(text, add_special=add_special)

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of a token list."""
        return b"".join(self._vocab.piece(t) for t in tokens).decode("utf-8", "replace")

    @property
    def native_model(self) -> NativeModel:
        """The loaded model."""
        return self._model

    def status(self) -> dict[str, Any]:
        """A snapshot in the shape of :meth:`engine.runtime.Engine.status` (no slots)."""
        return {"model": self._name, "model_path": self.spec.model_path,
                "load_progress": self._progress, "load_seconds": self.load_seconds,
                "n_ctx_per_seq": self.n_ctx_per_seq, "n_ctx": self.n_ctx_per_seq,
                "slots": [], "queue_length": 0, "devices": [], "closed": False,
                "embeddings": self.embedder.status() if self.embedder else None}

    def close(self) -> None:
        """Stop the embedder and free the model. Idempotent."""
        with self._closed:
            if self.embedder is not None:
                self.embedder.close()
                self.embedder = None
            self._model.free()


def open_engine(spec: LaunchSpec, *, queue_size: int = 64,
                progress: Callable[[float], bool] | None = None,
                embeddings: bool = False) -> Engine | EmbeddingEngine:
    """The engine that serves ``spec``'s model: an :class:`EmbeddingEngine` for an
    embedding model, else an :class:`engine.runtime.Engine`, with an embedder over the
    same weights (``CAUSAL_POOLING`` pooling) when ``embeddings`` is asked for.

    Raises:
        as :class:`engine.runtime.Engine`.
    """
    from engine.runtime import Engine

    try:
        kind = embedding_kind(spec.model_path)
    except Exception:  # llama.cpp's own load says what is wrong with the file
        log.debug("could not read the header of %s", spec.model_path, exc_info=True)
        kind = EmbeddingKind("", False, None)
    if kind.is_embedding_model:
        return EmbeddingEngine(spec, kind, queue_size=queue_size, progress=progress)
    engine = Engine(spec, queue_size=queue_size, progress=progress)
    if embeddings:
        try:
            engine.embedder = Embedder(engine.native_model, spec, pooling=CAUSAL_POOLING,
                                       max_input_tokens=engine.n_ctx_per_seq,
                                       queue_size=queue_size, warm_up=spec.warm_up)
        except BaseException:
            engine.close()
            raise
    return engine
