"""The LaunchSpec: exactly what llama.cpp is asked to do, and the one road to it.

A Plan becomes a spec here and nowhere else (:func:`spec_of_plan`; without a plan,
:func:`unplanned_spec`), and the one out-of-memory ladder lives here too
(:func:`safer_request`, :class:`ReplanLadder`), which the CLI and the app both follow.
Field names follow llama-cpp-python's ``Llama`` / ``llama_context_params``, as
:class:`planner.plan_types.EngineParams`'s do. The values are typed (``KvType``,
``SplitMode``, ``FlashAttn``: each knows llama.cpp's number for itself), so the native
layer passes them on without translating names. The spec travels to the engine process
as one JSON document: :meth:`LaunchSpec.to_json` writes it (:func:`write_spec_file`),
:meth:`LaunchSpec.from_json` reads it back (:func:`read_spec_file`). Planning a model
on this machine before its load (detection, the dry run) is :mod:`engine.planned_launch`.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from engine.speculative import SPEC_MODES
from planner.engine_params import expert_override
from planner.ggml_types import KvType
from planner.inventory import Inventory
from planner.plan_types import EngineParams, Plan, SplitMode
from planner.request import Request

log = logging.getLogger(__name__)

SPLIT_MODES = tuple(m.value for m in SplitMode)
KV_TYPES = tuple(t.value for t in KvType)


class FlashAttn(StrEnum):
    """Flash attention: on, off, or llama.cpp's choice (``llama_flash_attn_type``)."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"

    @property
    def id(self) -> int:
        """The ``LLAMA_FLASH_ATTN_TYPE_*`` value."""
        return {"auto": -1, "off": 0, "on": 1}[self.value]

    @classmethod
    def of(cls, value: str | bool) -> FlashAttn:
        """``value`` as a mode (a plan's bool: on or off).

        Raises:
            ValueError: no such mode.
        """
        if isinstance(value, bool):
            return cls.ON if value else cls.OFF
        return cls(str(value).lower())


FLASH_ATTN = tuple(m.value for m in FlashAttn)


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
    split_mode: SplitMode = SplitMode.LAYER
    use_mmap: bool = True
    use_mlock: bool = False
    flash_attn: FlashAttn = FlashAttn.AUTO
    type_k: KvType = KvType.F16
    type_v: KvType = KvType.F16
    offload_kqv: bool = True
    swa_full: bool = False
    kv_unified: bool = False
    tensor_overrides: tuple[tuple[str, str], ...] = ()
    # decode BOS/EOS once after the load (llama.cpp's server does too): the first request's
    # TTFT is then its own, and a decode that cannot run fails the load
    warm_up: bool = True
    # llama.cpp device names to split layers over, in order (empty: llama.cpp's default
    # of every local GPU); RPC devices of remote workers are named here explicitly.
    devices: tuple[str, ...] = ()
    # RPC workers (HOST:PORT) whose devices are registered before the load.
    rpc_workers: tuple[str, ...] = ()
    # speculative decoding for requests that do not choose: "off" | "ngram" | "draft" | "mtp"
    # | "dflash" ("draft" loads draft_model_path beside the model, "mtp" the model's NextN
    # layers, "dflash" the DFlash drafter at draft_model_path, fed the model's layer inputs)
    spec_mode: str = "off"
    draft_tokens: int = 8
    # the draft model or DFlash drafter (same vocabulary) and its own placement
    draft_model_path: str | None = None
    draft_n_gpu_layers: int = -1
    draft_devices: tuple[str, ...] = ()
    # the plan's features and raw predicted figures (JSON), recorded with every finished
    # request (engine/run_records.py); "" records nothing
    run_features: str = ""
    # the multimodal projector (mmproj GGUF) loaded beside the model, for images; with
    # mmproj_offload it goes to the GPU llama.cpp picks, else it stays on the CPU
    mmproj_path: str | None = None
    mmproj_offload: bool = True

    def __post_init__(self) -> None:
        # a name (a JSON document's, a command line's) becomes its typed value here, once
        try:
            object.__setattr__(self, "split_mode", SplitMode.of(self.split_mode))
        except ValueError:
            raise ValueError(f"split_mode must be one of {SPLIT_MODES}, not "
                             f"{self.split_mode!r}") from None
        try:
            object.__setattr__(self, "flash_attn", FlashAttn.of(self.flash_attn))
        except ValueError:
            raise ValueError(f"flash_attn must be one of {FLASH_ATTN}, not "
                             f"{self.flash_attn!r}") from None
        for name in ("type_k", "type_v"):
            try:
                object.__setattr__(self, name, KvType.of(getattr(self, name)))
            except ValueError:
                raise ValueError(f"{name} must be one of {KV_TYPES}") from None
        if self.spec_mode not in SPEC_MODES:
            raise ValueError(f"spec_mode must be one of {SPEC_MODES}, not {self.spec_mode!r}")
        if self.draft_tokens < 0:
            raise ValueError("draft_tokens must not be negative")
        if self.spec_mode in ("draft", "dflash") and not self.draft_model_path:
            raise ValueError(f"spec_mode {self.spec_mode!r} needs draft_model_path")
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
    def from_plan_engine(cls, model_path: str, engine: EngineParams | Mapping[str, Any]
                         ) -> LaunchSpec:
        """The spec of a plan's engine parameters (:func:`spec_of_plan` with no more).

        ``engine`` is a Plan's :class:`EngineParams`, or a mapping of LaunchSpec fields
        (a plan document's ``engine`` object; unknown keys ignored): ``flash_attn`` may be
        a bool, ``type_k`` / ``type_v`` a ggml id, ``split_mode`` a ``LLAMA_SPLIT_MODE_*``.
        """
        if isinstance(engine, EngineParams):
            return _of_params(str(model_path), engine)
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in engine.items():
            if key not in known or key == "model_path":
                log.debug("LaunchSpec ignores plan engine key %r", key)
                continue
            values[key] = _coerce(key, value)
        return cls(model_path=str(model_path), **values)

    def to_json(self) -> dict[str, Any]:
        """The spec's JSON document (what :meth:`from_json` reads back)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "tensor_overrides":
                value = [list(pair) for pair in value]
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, StrEnum):
                value = value.value
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LaunchSpec:
        """The spec :meth:`to_json` wrote (keys it does not know are ignored).

        Raises:
            KeyError: no ``model_path``.
            ValueError: a value llama.cpp does not take.
        """
        rest = {k: v for k, v in doc.items() if k != "model_path"}
        return cls.from_plan_engine(str(doc["model_path"]), rest)

    def with_changes(self, **changes: Any) -> LaunchSpec:
        """A copy with some fields changed."""
        return replace(self, **changes)


def _coerce(key: str, value: Any) -> Any:
    """A JSON value as the field ``key`` holds it (lists become tuples; the typed fields
    take their names or numbers in ``__post_init__``)."""
    if key == "tensor_split":
        return tuple(float(x) for x in (value or ()))
    if key == "tensor_overrides":
        return tuple((str(p), str(d)) for p, d in (value or ()))
    if key in ("devices", "rpc_workers", "draft_devices"):
        return tuple(str(x) for x in (value or ()))
    return value


def _of_params(model_path: str, engine: EngineParams) -> LaunchSpec:
    """The spec that carries out ``engine`` (field by field: the names are the same)."""
    spec = LaunchSpec(
        model_path=model_path, n_ctx=engine.n_ctx, n_seq_max=engine.n_seq_max,
        n_batch=engine.n_batch, n_ubatch=engine.n_ubatch, n_threads=engine.n_threads,
        n_threads_batch=engine.n_threads_batch, n_gpu_layers=engine.n_gpu_layers,
        tensor_split=engine.tensor_split or (), main_gpu=engine.main_gpu,
        split_mode=engine.split_mode, use_mmap=engine.use_mmap, use_mlock=engine.use_mlock,
        flash_attn=FlashAttn.of(engine.flash_attn), type_k=engine.type_k,
        type_v=engine.type_v, offload_kqv=engine.offload_kqv, swa_full=engine.swa_full,
        kv_unified=engine.kv_unified, tensor_overrides=engine.tensor_overrides,
        devices=engine.devices, rpc_workers=engine.rpc_workers,
        run_features=engine.run_features)
    if engine.spec_mode.value != "off":
        spec = replace(spec, spec_mode=engine.spec_mode.value, draft_tokens=engine.draft_tokens,
                       draft_model_path=engine.draft_model_path)
        if engine.draft_n_gpu_layers is not None:
            spec = replace(spec, draft_n_gpu_layers=engine.draft_n_gpu_layers)
    if engine.mmproj_offload is not None:
        spec = replace(spec, mmproj_offload=engine.mmproj_offload)
    return spec


def spec_of_plan(model_path: str | Path, plan: Plan, *, n_threads: int | None = None,
                 mmproj_path: str | Path | None = None) -> LaunchSpec:
    """The one road from a Plan to a LaunchSpec: its engine parameters, with the threads
    it will run with (``n_threads``, when the caller pins them) and its vision projector.

    Args:
        model_path: the model's GGUF file.
        plan: the Plan (its ``engine`` parameters are carried out as they are).
        n_threads: threads for decode and prompt processing (None: the plan's).
        mmproj_path: the projector the plan placed (None: none).
    """
    spec = _of_params(str(model_path), plan.engine)
    if mmproj_path:
        spec = replace(spec, mmproj_path=str(mmproj_path))
    if n_threads:
        spec = replace(spec, n_threads=n_threads, n_threads_batch=n_threads)
    return spec


def write_spec_file(spec: LaunchSpec, folder: Path) -> Path:
    """Write ``spec`` for the engine process (``loadout serve --launch-spec FILE``), which
    reads it back with :func:`read_spec_file`. Returns the file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "launch-spec.json"
    path.write_text(json.dumps(spec.to_json(), indent=2), encoding="utf-8")
    return path


def read_spec_file(path: Path, model_path: str | Path | None = None) -> LaunchSpec:
    """The spec :func:`write_spec_file` wrote (for ``model_path`` when given: the command
    line names the model).

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not a spec (bad JSON, a value llama.cpp does not take).
        KeyError: it names no model and ``model_path`` is None.
    """
    doc = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{path} holds no launch spec")
    if model_path is not None:
        doc["model_path"] = str(model_path)
    return LaunchSpec.from_json(doc)


T = TypeVar("T")


def load_with_replan(
    make_spec: Callable[[int], LaunchSpec],
    load: Callable[[LaunchSpec], T],
    max_attempts: int = 3,
    on_failure: Callable[[Exception], None] | None = None,
) -> T:
    """Load, and on an out-of-memory failure re-plan and retry.

    Args:
        make_spec: returns the spec for attempt ``i`` (0, 1, ...); a caller re-plans with a
            reserve that grows with ``i``, or (told by ``on_failure`` that a GPU ran out)
            with that GPU shrunk (:func:`shrink_after_out_of_memory`).
        load: loads a spec (e.g. ``Engine``), raising ``OutOfMemoryError`` on lack of memory.
        max_attempts: bound on the number of loads.
        on_failure: called with each out-of-memory error before the next attempt.

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
            if on_failure is not None and attempt + 1 < max_attempts:
                on_failure(exc)
    assert last is not None
    raise last


def gpu_out_of_memory(exc: BaseException) -> str:
    """The GPU device (llama.cpp's name, ``CUDA0``, ``Vulkan0`` ...) an out-of-memory error
    names, or "" when it is host memory or not said."""
    device = str(getattr(exc, "device", "") or "")
    return "" if _is_host(device) else device


def _is_host(device: str) -> bool:
    return not device or device.upper().startswith("CPU") or device.endswith("_Host")


_OOM_DEVICE = re.compile(r"failed to allocate (\S+) buffer|out of memory on ([^\s:,]+)")


def gpu_out_of_memory_in_log(text: str) -> str:
    """The GPU device an engine's log says ran out of memory (the last one named), or ""
    when the log names none or only host memory (for a ladder that reads a dead engine's
    log instead of catching its error)."""
    found = [str(a or b) for a, b in _OOM_DEVICE.findall(text)]
    for device in reversed(found):
        if not _is_host(device):
            return device
    return ""


def out_of_memory_cause(failure: BaseException | str) -> str:
    """What ran out, from a load's error or a dead engine's log: a GPU's llama.cpp name,
    ``"CPU"`` for host memory, or "" when it is not said (a killed engine)."""
    if isinstance(failure, str):
        gpu = gpu_out_of_memory_in_log(failure)
        return gpu or ("CPU" if _OOM_DEVICE.search(failure) else "")
    device = str(getattr(failure, "device", "") or "")
    return "CPU" if device and _is_host(device) else device


HOST_RESERVE_STEP = 2 * 1024**3   # more RAM kept free per host failure
RESERVE_STEP_BYTES = HOST_RESERVE_STEP
MAX_LOAD_ATTEMPTS = 3             # the first load and two re-plans
MIN_UBATCH = 64


def safer_request(request: Request, attempt: int, gpu_layers: int | None = None) -> Request:
    """The Request to re-plan with on attempt ``attempt`` of :class:`ReplanLadder` (0: the
    request as asked): the host reserve larger by ``attempt`` x 2 GiB and, when
    ``gpu_layers`` is given, that many GPU layers pinned (fewer than the failed load's)."""
    out = replace(request, advise=False,
                  host_reserve_bytes=request.host_reserve_bytes + attempt * HOST_RESERVE_STEP)
    return out if gpu_layers is None else replace(out, n_gpu_layers=gpu_layers)


def safer_spec(spec: LaunchSpec, n_layers: int, attempt: int = 1) -> LaunchSpec:
    """A spec less likely to run out of memory than ``spec``, for when there is no plan
    to re-make: a quarter fewer GPU layers per attempt (so more memory stays free on the
    GPU), halved batches (smaller compute buffers). ``n_layers`` is the model's block
    count."""
    ubatch, batch = _halved_batches(spec)
    return replace(spec, n_gpu_layers=fewer_gpu_layers(spec.n_gpu_layers, n_layers, attempt),
                   n_ubatch=ubatch, n_batch=batch)


def fewer_gpu_layers(gpu_layers: int, n_layers: int, attempt: int = 1) -> int:
    """A quarter fewer than ``gpu_layers`` (-1: all ``n_layers`` + the output) per attempt,
    at least one fewer while there are any."""
    all_layers = n_layers + 1  # llama.cpp counts the output layer too
    current = all_layers if gpu_layers < 0 else min(gpu_layers, all_layers)
    fewer = max(0, int(current * (0.75 ** attempt)))
    if current > 0 and fewer >= current:
        fewer = current - 1
    return fewer


def _halved_batches(spec: LaunchSpec) -> tuple[int, int]:
    """(n_ubatch, n_batch) half of ``spec``'s (a micro-batch of at least 64)."""
    ubatch = max(MIN_UBATCH, spec.n_ubatch // 2)
    return ubatch, max(ubatch, spec.n_batch // 2)


class ReplanLadder:
    """The one out-of-memory ladder: what the next load changes after one ran out of
    memory. The CLI (``chat``, ``bench``, ``serve``) and the app follow it alike.

    Each failure is read for what ran out (:func:`out_of_memory_cause`) and the model is
    planned again, so the planner places and prices the result:

    * a GPU named: that GPU is given half of what the failed plan put there
      (:func:`shrink_after_out_of_memory`): it held less than it reported;
    * host memory named: the host reserve grows by 2 GiB per such failure
      (:func:`safer_request`);
    * nothing named (an engine killed by the system): both the host reserve grows and a
      quarter fewer GPU layers than the failed load are pinned (:func:`fewer_gpu_layers`).

    On every retry the re-planned spec's batches are also at most half the failed load's
    (smaller compute buffers on every device; :meth:`spec`). Bounded: at most
    ``max_attempts`` loads in all (:attr:`exhausted`); then the last error stands.
    """

    def __init__(self, max_attempts: int = MAX_LOAD_ATTEMPTS) -> None:
        self.max_attempts = max(1, max_attempts)
        self.attempt = 0          # failures recorded
        self.host_attempt = 0     # of them, host memory (or not said)
        self.layer_cuts = 0       # of them, not said: GPU layers cut
        self.gpu_layers: int | None = None        # the GPU layers pinned since a cut
        self._cut = False
        self.failed_gpu_plans: list[Any] = []
        self.last_plan: Any = None                 # the Plan (or its JSON) being loaded
        self.last_spec: LaunchSpec | None = None   # and its spec

    def loading(self, spec: LaunchSpec, plan: Any = None) -> None:
        """Record what is being loaded (what the next failure is a failure of)."""
        self.last_spec, self.last_plan = spec, plan

    @property
    def exhausted(self) -> bool:
        """True when no further load is allowed."""
        return self.attempt + 1 >= self.max_attempts

    def failed(self, failure: BaseException | str) -> str:
        """Record a failure of the last load (its error, or a dead engine's log); returns
        a line saying what the next plan changes."""
        self.attempt += 1
        cause = out_of_memory_cause(failure)
        if cause and cause != "CPU" and self.last_plan is not None:
            self.failed_gpu_plans.append(self.last_plan)
            return f"out of memory on {cause}; re-planned with less on that device"
        self.host_attempt += 1
        if cause:
            return "out of memory; re-planned with a larger host reserve"
        self.layer_cuts += 1
        self._cut = True
        return "the engine stopped; re-planned with a larger host reserve and fewer GPU layers"

    def request(self, request: Request, n_layers: int = 0) -> Request:
        """The Request to plan the next load with (``n_layers``: the model's blocks); a
        cut in GPU layers, once made, stays pinned on the rungs after it."""
        if self._cut and self.last_spec is not None and self.last_spec.n_gpu_layers:
            self.gpu_layers = fewer_gpu_layers(self.last_spec.n_gpu_layers, n_layers, 1)
        self._cut = False
        return safer_request(request, self.host_attempt, self.gpu_layers)

    def inventory(self, inventory: Inventory) -> Inventory:
        """The machine to plan the next load on: each GPU that ran out shrunk."""
        for failed in self.failed_gpu_plans:
            inventory = shrink_after_out_of_memory(inventory, failed)
        return inventory

    def spec(self, planned: LaunchSpec) -> LaunchSpec:
        """The re-planned spec, with batches at most half the failed load's."""
        if not self.attempt or self.last_spec is None:
            return planned
        half_ubatch, half_batch = _halved_batches(self.last_spec)
        ubatch = min(planned.n_ubatch, half_ubatch)
        return replace(planned, n_ubatch=ubatch,
                       n_batch=max(ubatch, min(planned.n_batch, half_batch)))


def shrink_after_out_of_memory(inventory: Inventory, failed_plan: Plan | Mapping[str, Any]
                               ) -> Inventory:
    """The inventory to re-plan with after ``failed_plan`` (a Plan, or its JSON) ran out of
    memory on a GPU:
    each local GPU it used is given half of what that plan put there (plus the planner's
    reserve), since the device held less than it reported. A larger host reserve alone
    never moves anything off a GPU."""
    from planner.roles import reserve_for

    if isinstance(failed_plan, Mapping):  # the plan's JSON (PlannedLaunch.plan)
        used = {str(d["id"]): int(d["weights_bytes"]) + int(d["kv_bytes"])
                + int(d["compute_bytes"]) + int(d["other_bytes"])
                for d in failed_plan.get("devices", []) if d.get("kind") == "gpu"}
    else:
        used = {d.id: d.used_bytes for d in failed_plan.devices if d.kind == "gpu"}
    gpus = []
    for g in inventory.gpus:
        planned = used.get(f"gpu{g.index}", 0)
        if planned and not g.remote:
            g = replace(g, free_bytes=min(g.free_bytes, planned // 2 + reserve_for(g)))
        gpus.append(g)
    return replace(inventory, gpus=tuple(gpus))


def unplanned_spec(model_path: str | Path, context: int, parallel: int = 1,
                   n_threads: int | None = None, pins: Mapping[str, Any] | None = None
                   ) -> LaunchSpec:
    """The spec without a plan (``--no-plan``, or the planner failed): every layer on the
    engine's default device, f16 KV, unless ``pins`` (the planner's request names:
    ``n_gpu_layers``, ``tensor_split``, ``kv_type``, ``n_cpu_moe``) say otherwise.
    ``n_cpu_moe`` keeps the first N blocks' experts on the CPU with the planner's expert
    regex (:func:`planner.engine_params.expert_override`)."""
    pins = pins or {}
    changes: dict[str, Any] = {"n_ctx": context * parallel, "n_seq_max": parallel}
    if n_threads:
        changes["n_threads"] = changes["n_threads_batch"] = n_threads
    if pins.get("n_gpu_layers") is not None:
        changes["n_gpu_layers"] = int(pins["n_gpu_layers"])
    if pins.get("tensor_split"):
        changes["tensor_split"] = tuple(float(x) for x in pins["tensor_split"])
    if pins.get("kv_type"):
        changes["type_k"] = changes["type_v"] = KvType.of(str(pins["kv_type"]))
    if pins.get("n_cpu_moe"):
        layers = list(range(int(pins["n_cpu_moe"])))
        changes["tensor_overrides"] = ((expert_override(layers), "CPU"),)
    return LaunchSpec(model_path=str(model_path), **changes)
