"""The LaunchSpec: exactly what llama.cpp is asked to do, built from ``Plan.engine``.

Field names follow llama-cpp-python's ``Llama`` / ``llama_context_params`` so that a Plan's
``engine`` mapping converts one to one. The spec is plain data (JSON in, JSON out): the GUI
process builds it, the engine process carries it out.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

log = logging.getLogger(__name__)

SPLIT_MODES = ("none", "layer", "row")
FLASH_ATTN = ("auto", "on", "off")
KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")


def default_threads() -> int:
    """Threads for decoding: the physical cores (hyper-threads only contend for bandwidth)."""
    try:
        import psutil

        physical = psutil.cpu_count(logical=False)
    except ImportError:  # pragma: no cover - psutil is a dependency
        physical = None
    return max(1, physical or os.cpu_count() or 1)


@dataclass(frozen=True)
class LaunchSpec:
    """Every parameter the engine passes to llama.cpp when loading a model.

    ``n_ctx`` is the TOTAL number of KV cells: context per sequence x ``n_seq_max``
    (unless ``kv_unified``). ``tensor_overrides`` pairs a tensor-name regex with the
    llama.cpp device (``CPU``, ``CUDA0`` ...) whose buffer type holds the matching tensors.
    """

    model_path: str
    n_ctx: int = 4096
    n_seq_max: int = 1
    n_batch: int = 2048
    n_ubatch: int = 512
    n_threads: int | None = None
    n_threads_batch: int | None = None
    n_gpu_layers: int = -1
    tensor_split: tuple[float, ...] = ()
    main_gpu: int = 0
    split_mode: str = "layer"
    use_mmap: bool = True
    use_mlock: bool = False
    flash_attn: str = "auto"
    type_k: str = "f16"
    type_v: str = "f16"
    offload_kqv: bool = True
    swa_full: bool = False
    kv_unified: bool = False
    tensor_overrides: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.split_mode not in SPLIT_MODES:
            raise ValueError(f"split_mode must be one of {SPLIT_MODES}, not {self.split_mode!r}")
        if self.flash_attn not in FLASH_ATTN:
            raise ValueError(f"flash_attn must be one of {FLASH_ATTN}, not {self.flash_attn!r}")
        for name in ("type_k", "type_v"):
            if getattr(self, name) not in KV_TYPES:
                raise ValueError(f"{name} must be one of {KV_TYPES}")
        if self.n_ctx < 1 or self.n_seq_max < 1 or self.n_batch < 1 or self.n_ubatch < 1:
            raise ValueError("n_ctx, n_seq_max, n_batch and n_ubatch must be positive")

    @property
    def threads(self) -> int:
        """Decode threads actually used (``n_threads`` or the physical cores)."""
        return self.n_threads or default_threads()

    @property
    def threads_batch(self) -> int:
        """Prompt-processing threads actually used."""
        return self.n_threads_batch or self.threads

    @property
    def n_ctx_per_seq(self) -> int:
        """Cells one sequence may use."""
        return self.n_ctx if self.kv_unified else self.n_ctx // self.n_seq_max

    @classmethod
    def from_plan_engine(cls, model_path: str, engine: Mapping[str, Any]) -> LaunchSpec:
        """Build a spec from ``Plan.engine`` (llama-cpp-python names; unknown keys ignored).

        ``flash_attn`` may be a bool; ``tensor_overrides`` a list of ``[pattern, device]``.
        """
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in engine.items():
            if key not in known or key == "model_path":
                log.debug("LaunchSpec ignores plan engine key %r", key)
                continue
            values[key] = _coerce(key, value)
        return cls(model_path=str(model_path), **values)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples become lists)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "tensor_overrides":
                value = [list(pair) for pair in value]
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LaunchSpec:
        """The inverse of :meth:`to_json`."""
        rest = {k: v for k, v in doc.items() if k != "model_path"}
        return cls.from_plan_engine(str(doc["model_path"]), rest)

    def with_changes(self, **changes: Any) -> LaunchSpec:
        """A copy with some fields changed."""
        return replace(self, **changes)


def _coerce(key: str, value: Any) -> Any:
    if key == "flash_attn" and isinstance(value, bool):
        return "on" if value else "off"
    if key == "tensor_split":
        return tuple(float(x) for x in (value or ()))
    if key == "tensor_overrides":
        return tuple((str(p), str(d)) for p, d in (value or ()))
    if key in ("type_k", "type_v") and isinstance(value, str):
        return value.lower()
    if key == "split_mode" and isinstance(value, int):
        return SPLIT_MODES[value]
    return value


T = TypeVar("T")


def load_with_replan(
    make_spec: Callable[[int], LaunchSpec],
    load: Callable[[LaunchSpec], T],
    max_attempts: int = 3,
) -> T:
    """Load, and on an out-of-memory failure re-plan with a larger reserve and retry.

    Args:
        make_spec: returns the spec for attempt ``i`` (0, 1, ...); a caller re-plans with a
            reserve that grows with ``i``.
        load: loads a spec (e.g. ``Engine``), raising ``OutOfMemoryError`` on lack of memory.
        max_attempts: bound on the number of loads.

    Raises:
        OutOfMemoryError: the last attempt still did not fit.
    """
    from engine.errors import OutOfMemoryError

    last: OutOfMemoryError | None = None
    for attempt in range(max(1, max_attempts)):
        spec = make_spec(attempt)
        try:
            return load(spec)
        except OutOfMemoryError as exc:
            log.warning("load attempt %d ran out of memory: %s", attempt + 1, exc)
            last = exc
    assert last is not None
    raise last
