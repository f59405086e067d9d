"""The LaunchSpec: exactly what llama.cpp is asked to do, and the one road to it.

A Plan becomes a spec here and nowhere else (:func:`spec_of_plan`; without a plan,
:func:`unplanned_spec`), and the one out-of-memory ladder lives here too
(:func:`safer_request`, :class:`ReplanLadder`), which the CLI and the app both follow.
Field names follow llama-cpp-python's ``Llama`` / ``llama_context_params``, as
:class:`planner.plan_types.EngineParams`'s do. The values are typed (``KvType``,
``SplitMode``, ``FlashAttn``: each knows llama.cpp's number for itself), so the native
layer passes them on without translating names. The spec travels to the engine process
as one JSON document: :meth:`LaunchSpec.to_json` writes it (:func:`write_spec_file`),
:meth:`LaunchSpec.from_json` reads it back (:func:`read_spec_file`).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from engine.speculative import SPEC_MODES
from planner.engine_params import expert_override
from planner.ggml_types import KvType
from planner.plan_types import EngineParams, Plan, SplitMode

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
    if not device or device.upper().startswith("CPU") or device.endswith("_Host"):
        return ""
    return device


_OOM_DEVICE = re.compile(r"failed to allocate (\S+) buffer|out of memory on ([^\s:,]+)")


def gpu_out_of_memory_in_log(text: str) -> str:
    """The GPU device an engine's log says ran out of memory (the last one named), or ""
    when the log names none or only host memory (for a ladder that reads a dead engine's
    log instead of catching its error)."""
    found = [str(a or b) for a, b in _OOM_DEVICE.findall(text)]
    for device in reversed(found):
        if not (device.upper().startswith("CPU") or device.endswith("_Host")):
            return device
    return ""


class ReplanLadder:
    """What the next re-plan after an out-of-memory load changes: a GPU that ran out gets
    half of what the failed plan put there (:func:`shrink_after_out_of_memory`); host
    memory that ran out grows the host reserve (``plan_launch(attempt=...)``)."""

    def __init__(self) -> None:
        self.host_attempt = 0
        self.failed_gpu_plans: list[Mapping[str, Any]] = []
        self.last_plan: Mapping[str, Any] | None = None

    def failed(self, exc: Exception) -> str:
        """Record a failure of the last planned load; returns a line saying what changes."""
        device = gpu_out_of_memory(exc)
        if device and self.last_plan is not None:
            self.failed_gpu_plans.append(self.last_plan)
            return f"out of memory on {device}; re-planned with less on that device"
        self.host_attempt += 1
        return "out of memory; re-planned with a larger host reserve"


def shrink_after_out_of_memory(inventory: Any, failed_plan: Any) -> Any:
    """The inventory to re-plan with after ``failed_plan`` (a Plan, or its JSON) ran out of
    memory on a GPU:
    each local GPU it used is given half of what that plan put there (plus the planner's
    reserve), since the device held less than it reported. A larger host reserve alone
    (``plan_launch(attempt=...)``) never moves anything off a GPU."""
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


@dataclass(frozen=True)
class PlannedLaunch:
    """A spec to load, and the Plan it came from (its JSON), when the planner ran."""

    spec: LaunchSpec
    plan: dict[str, Any] | None
    note: str = ""

    @property
    def predicted(self) -> dict[str, Any] | None:
        """The Plan's ``predicted`` speeds, if there is a Plan."""
        return dict(self.plan["predicted"]) if self.plan else None


RESERVE_STEP_BYTES = 2 * 1024**3


def plan_launch(model_path: str, *, context: int = 4096, parallel: int = 1,
                prompt_tokens: int = 512, n_threads: int | None = None,
                overrides: Mapping[str, Any] | None = None,
                attempt: int = 0, depth: int = 0,
                workers: Sequence[str] = (),
                failed_gpu_plans: Sequence[Mapping[str, Any]] = (),
                mmproj_path: str | None = None,
                mmproj_offload: bool = True) -> PlannedLaunch:
    """Plan the model on this machine and return the spec of that Plan.

    ``overrides`` use the planner's request names (``n_gpu_layers``, ``n_cpu_moe``,
    ``tensor_split``, ``kv_type``). ``attempt`` > 0 re-plans after an out-of-memory load
    with a host reserve larger by ``attempt`` x 2 GiB. ``depth``: the tokens already in the
    cache while decoding, for the prediction. ``workers``: RPC workers (``HOST:PORT``)
    whose devices the plan may use; unreachable ones are left out, with a note.
    ``failed_gpu_plans``: plans (JSON) that ran out of memory on a GPU; each shrinks the
    GPUs it used (:func:`shrink_after_out_of_memory`) before planning. ``mmproj_path``: a
    vision projector planned beside the model (its memory held back first). When the
    planner is unavailable or fails, a default spec (all layers on the engine's default
    device, f16 KV) is returned with a note.
    """
    pins = {k: v for k, v in (overrides or {}).items() if v is not None}
    try:
        from engine import run_records
        from engine.gguf_file import load_profile
        from engine.hardware import detect
        from planner.plan import plan
        from planner.request import Request

        request = Request(context=context, parallel=parallel, prompt_tokens=prompt_tokens,
                          depth=depth, advise=False, machine_runs=run_records.samples(),
                          **pins)
        if attempt:
            request = replace(request, host_reserve_bytes=request.host_reserve_bytes
                              + attempt * RESERVE_STEP_BYTES)
        inventory = detect(measure=False)
        if n_threads:  # priced with the threads it will run with
            inventory = replace(inventory, host=replace(inventory.host, cores=n_threads))
        note = ""
        if workers:
            from engine.hardware.workers import add_workers

            inventory = add_workers(inventory, list(workers))
            left = [n.split(":", 1)[1] for n in inventory.notes
                    if n.startswith("worker_unreachable:")]
            if left:
                note = "workers left out of the plan: " + ", ".join(left)
        for failed in failed_gpu_plans:
            inventory = shrink_after_out_of_memory(inventory, failed)
        profile = load_profile(model_path)
        if mmproj_path:
            from engine.gguf_file import load_projector
            from planner.plan import plan_with_projector

            the_plan = plan_with_projector(inventory, profile, request,
                                           load_projector(mmproj_path), mmproj_offload)
        else:
            the_plan = plan(inventory, profile, request)
        from engine.dry_run import check_of, confirm_for

        confirmed = confirm_for(model_path, inventory, request, the_plan)  # llama.cpp's view
        # a re-plan by the dry run knows nothing of the projector: the projector's plan stays
        the_plan = the_plan if mmproj_path and confirmed is not the_plan else confirmed
        doc = the_plan.to_json()
        check = check_of(the_plan)
        if check is not None:
            doc["dry_run"] = check.to_json()
        spec = spec_of_plan(model_path, the_plan, n_threads=n_threads, mmproj_path=mmproj_path)
        return PlannedLaunch(spec, doc, note=note)
    except Exception as exc:  # the default path must keep working while the planner grows
        log.warning("planning failed (%s: %s); using the default launch", type(exc).__name__,
                    exc)
        return PlannedLaunch(unplanned_spec(model_path, context, parallel, n_threads, pins),
                             None, note=f"not planned: {type(exc).__name__}: {exc}")


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
