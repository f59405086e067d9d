"""The child process of tests/gpu: runs on the engine build ``LOADOUT_ENGINE`` names
(the Vulkan build), does one job and prints one JSON line.

    python tests/gpu/worker.py devices
    python tests/gpu/worker.py memory CASE...         # bench/gpu_memory.py cases
    python tests/gpu/worker.py answer PIN...          # full | half | cpu
    python tests/gpu/worker.py capped MIB             # a rig leaving MIB for the model
    python tests/gpu/worker.py oom MIB                # a plan too big for a MIB device
    python tests/gpu/worker.py dryrun                 # llama.cpp's dry run, right and wrong
    python tests/gpu/worker.py split HOST:PORT        # this device + a worker's device
    python tests/gpu/worker.py app OUT_DIR            # Home and Plan pages, screenshots
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import gpu_memory as gm  # noqa: E402

MIB = 1 << 20
PROMPT = "The capital of France is"
ANSWER_TOKENS = 4  # " Paris.\n\n": the answer itself (see the README on token 6)


def devices() -> dict[str, Any]:
    from engine.ggml_devices import engine_devices
    from engine.hardware import detect

    inventory = detect(measure=False)
    return {"devices": [d.__dict__ for d in engine_devices()],
            "gpus": [{"name": g.name, "backend": g.backend.value, "total_bytes": g.total_bytes,
                      "free_bytes": g.free_bytes, "engine_device": g.engine_device}
                     for g in inventory.gpus]}


def memory(names: list[str]) -> dict[str, Any]:
    wanted = [c for c in gm.cases() if c.name in names]
    with tempfile.TemporaryDirectory(prefix="loadout-gpu-") as tmp:
        paths = gm.models(Path(tmp))
        return {"results": [gm.run_case(c, paths[c.model]) for c in wanted]}


def answer(pins: list[str]) -> dict[str, Any]:
    """The demo's greedy answer with the plan's placement (``half``: half the layers)."""
    from engine.demo import demo_model_path
    from engine.launch import LaunchSpec
    from engine.requests import GenerationRequest, SamplingParams
    from engine.runtime import Engine

    path = demo_model_path()
    out: dict[str, Any] = {}
    for pin in pins:
        case = gm.Case(pin, "demo", {"n_gpu_layers": gm.N_LAYERS["demo"] // 2}
                       if pin == "half" else {"n_gpu_layers": 0} if pin == "cpu" else {},
                       context=512)
        inventory = gm.inventory_for(case)
        plan = gm.plan_case(case, Path(path), inventory)
        spec = LaunchSpec.from_plan_engine(str(path), plan.engine).with_changes(
            n_threads=2, n_threads_batch=2, warm_up=False)
        engine = Engine(spec)
        try:
            final = engine.submit(GenerationRequest(prompt=PROMPT, params=SamplingParams(
                temperature=0.0, max_tokens=ANSWER_TOKENS, ignore_eos=True))).result(600)
            log = [ln for ln in engine.load_log if "offloaded" in ln or "buffer size" in ln]
        finally:
            engine.close()
        out[pin] = {"text": final.text, "tokens": list(final.token_ids), "log": log,
                    "n_gpu_layers": plan.engine.n_gpu_layers}
    return out


BIG = dict(n_layers=16, n_embd=2048, n_head=16, n_head_kv=4, head_dim=128, n_ff=5632,
           n_vocab=32000)  # ~1.7 GB of F16 weights: more than a 600 MiB budget


def _big_model(folder: Path) -> Path:
    from tests.helpers.gguf_factory import Shape, write_llama

    return write_llama(folder / "big.gguf", Shape(**BIG), header_only=True)  # type: ignore[arg-type]


def _measure(plan: Any, inventory: Any, path: Path) -> dict[str, Any]:
    from engine.launch import LaunchSpec

    spec = LaunchSpec.from_plan_engine(str(path), plan.engine).with_changes(
        warm_up=False, n_threads=2, n_threads_batch=2)
    names = gm.engine_names(inventory, plan.engine)
    measured = gm.parse_log(gm.load_and_measure(spec))
    rows = gm.rows_of("limits", gm.predicted_bytes(plan), gm.per_device(measured, names))
    return {"rows": [r.__dict__ | {"error_pct": r.error_pct} for r in rows],
            "misses": gm.misses(rows),
            "placement_problems": gm.placement_problems(plan, measured, names),
            "layers_on_gpu": sum(1 for d in measured.layers.values()
                                 if gm.plan_device(d, names) != "host"),
            "buffers": measured.buffers}


def capped(budget_mib: int) -> dict[str, Any]:
    """A rig that leaves ``budget_mib`` for the model on the device (beyond the planner's
    reserve): the plan spills what does not fit, and the load succeeds as planned."""
    from planner.roles import reserve_for

    with tempfile.TemporaryDirectory(prefix="loadout-gpu-") as tmp:
        path = _big_model(Path(tmp))
        gpu = gm.inventory_for(gm.Case("x", "big")).gpus[0]
        case = gm.Case("capped", "big", gpu_free_bytes=reserve_for(gpu) + budget_mib * MIB)
        inventory = gm.inventory_for(case)
        plan = gm.plan_case(case, path, inventory)
        gpu_use = next(d for d in plan.devices if d.id == "gpu0")
        return {"budget_bytes": budget_mib * MIB, "spills": [s.to_json() for s in plan.spills],
                "gpu_planned": gpu_use.used_bytes, "gpu_layers": [list(r) for r in gpu_use.layers],
                **_measure(plan, inventory, path)}


def _vm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def oom(device_mib: int) -> dict[str, Any]:
    """A plan made too big on purpose: the rig says the device has 64 GiB free, while this
    process may address only ``device_mib`` beyond what it uses (lavapipe's device memory
    is this process's memory, so the limit is the device's real size). The load runs out
    of memory on the device, and each re-plan gives that device half of what the failed
    plan put there (:func:`engine.launch.shrink_after_out_of_memory`) until one loads."""
    import resource

    from engine.errors import AllocationFailedError
    from engine.launch import LaunchSpec, load_with_replan, shrink_after_out_of_memory
    from engine.native.context import NativeContext
    from engine.native.model import NativeModel, llama

    llama()
    with tempfile.TemporaryDirectory(prefix="loadout-gpu-") as tmp:
        path = _big_model(Path(tmp))
        real = gm.inventory_for(gm.Case("x", "big"))
        gpu = real.gpus[0]
        limit = _vm_bytes() + path.stat().st_size + device_mib * MIB
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        attempts: list[dict[str, Any]] = []
        # the rig claims 64 GiB free: a plan too big on purpose
        inventory = [replace(real, gpus=(replace(gpu, free_bytes=64 << 30,
                                                 total_bytes=64 << 30),))]
        plans: list[Any] = []

        def make_spec(attempt: int) -> LaunchSpec:
            if attempt:  # the product's re-plan after a device ran out of memory
                inventory[0] = shrink_after_out_of_memory(inventory[0], plans[-1])
            plan = gm.plan_case(gm.Case("oom", "big"), path, inventory[0])
            plans.append(plan)
            attempts.append({"n_gpu_layers": plan.engine.n_gpu_layers,
                             "gpu_planned": next(d.used_bytes for d in plan.devices
                                                 if d.id == "gpu0")})
            return LaunchSpec.from_plan_engine(str(path), plan.engine).with_changes(
                warm_up=False, n_threads=2, n_threads_batch=2)

        def load(spec: LaunchSpec) -> int:
            try:
                model = NativeModel(spec)
                try:
                    NativeContext(model, spec).free()
                finally:
                    model.free()
            except AllocationFailedError as exc:
                attempts[-1]["error"] = str(exc)
                attempts[-1]["device"] = exc.device
                raise
            return len(attempts)

        loaded = load_with_replan(make_spec, load, 4)
        return {"loaded_on_attempt": loaded, "attempts": attempts, "limit_mib": device_mib}


BUDGET_MIB = 550


def dryrun(wrong: bool) -> dict[str, Any]:
    """llama.cpp's dry run on the device. Right: the dense model's plan, confirmed. Wrong:
    the memory model made wrong on purpose (the KV cache under-predicted 8x) plans the dense
    model with a 32K context on a device with 550 MiB for it (the planner's 300 MiB runtime
    overhead included): it believes every layer fits, the dry run says the KV does not, and
    the corrected plan puts fewer layers on the device."""
    from engine import dry_run as dr
    from planner.request import Request
    from planner.roles import reserve_for

    if wrong:
        import planner.memory

        real = planner.memory.kv_layer_bytes

        def eighth(*a: Any, **k: Any) -> int:
            return real(*a, **k) // 8

        planner.memory.kv_layer_bytes = eighth  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="loadout-gpu-") as tmp:
        from tests.helpers.gguf_factory import Shape, write_llama

        path = write_llama(Path(tmp) / "dense-64k.gguf", Shape(
            n_layers=8, n_embd=512, n_head=8, n_head_kv=4, head_dim=64, n_ff=1536,
            n_vocab=32768, n_ctx_train=65536), header_only=True)
        if wrong:
            gpu = gm.inventory_for(gm.Case("x", "dense")).gpus[0]
            case = gm.Case("dry", "dense", gpu_free_bytes=reserve_for(gpu) + BUDGET_MIB * MIB,
                           context=32768)
        else:
            case = gm.Case("dry", "dense", context=8192)
        inventory = gm.inventory_for(case)
        plan = gm.plan_case(case, path, inventory)
        request = Request(context=case.context, parallel=1, advise=False, prompt_tokens=64)
        fixed, check = dr.confirm(str(path), inventory, request, plan)
        layers = {name: sum(last - first for d in p.devices if d.id == "gpu0"
                            for first, last in d.layers) for name, p in
                  (("before", plan), ("after", fixed))}
        return {"on_this_machine": dr.on_this_machine(inventory),
                "check": None if check is None else check.to_json(),
                "gpu_layers": layers, "changed": fixed is not plan,
                "budget_bytes": BUDGET_MIB * MIB if wrong else None}


def dryrun_half() -> dict[str, Any]:
    """The demo with half its layers on the device (its file sorts tensors by name, so
    device blocks lie between host blocks): the host's bytes against the plan."""
    from engine import dry_run as dr
    from engine.demo import demo_model_path
    from planner.request import Request

    path = demo_model_path()
    case = gm.Case("half", "demo", {"n_gpu_layers": gm.N_LAYERS["demo"] // 2}, context=512)
    inventory = gm.inventory_for(case)
    plan = gm.plan_case(case, Path(path), inventory)
    request = Request(context=case.context, parallel=1, advise=False, prompt_tokens=64)
    fixed, check = dr.confirm(str(path), inventory, request, plan)
    return {"check": None if check is None else check.to_json(), "changed": fixed is not plan,
            "n_gpu_layers": plan.engine.n_gpu_layers}


def split(endpoint: str) -> dict[str, Any]:
    """This machine's Vulkan device and a worker's (RPC), with the roles the user picks."""
    from engine.hardware.workers import add_workers
    from planner.request import Role

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="loadout-gpu-") as tmp:
        paths = {"dense": gm.models(Path(tmp))["dense"], "big": _big_model(Path(tmp))}
        inventory = add_workers(gm.inventory_for(gm.Case("x", "dense")), [endpoint],
                                link_gbps=1.0, measure=False)
        out["gpus"] = [{"index": g.index, "name": g.name, "remote": g.remote,
                        "backend": g.backend.value} for g in inventory.gpus]
        # the big model does not fit one device's budget: Main and Helper share it
        for name, roles, model in (("main+helper", (Role.MAIN, Role.HELPER), "big"),
                                   ("main+off", (Role.MAIN, Role.OFF), "big"),
                                   ("off+main", (Role.OFF, Role.MAIN), "dense")):
            path = paths[model]
            case = gm.Case(name, model, {"roles": roles})
            plan = gm.plan_case(case, path, inventory)
            result = _measure(plan, inventory, path)
            out[name] = {"roles": [r.to_json() for r in plan.roles],
                         "engine": {k: plan.engine.to_json().get(k) for k in
                                    ("devices", "rpc_workers", "tensor_split", "n_gpu_layers",
                                     "main_gpu")},
                         "devices": [{"id": d.id, "layers": [list(r) for r in d.layers]}
                                     for d in plan.devices], **result}
    return out


def _wait(signal: Any, seconds: float) -> None:
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def _pump(ms: int) -> None:
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def app(out_dir: str) -> dict[str, Any]:
    """The desktop app on this engine build: Home lists the device; the Plan page's memory
    map for the demo, then the buffers the load of that plan really allocates."""
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from app.i18n import LanguageSwitcher
    from app.main import MainWindow
    from app.settings_store import AppSettings
    from app.theme import apply_theme
    from engine.demo import demo_model_path
    from engine.hardware import detect
    from engine.launch import LaunchSpec
    from planner.memory import GPU_OVERHEAD_BYTES

    qapp = QApplication.instance() or QApplication([])
    apply_theme(qapp, "light")  # type: ignore[arg-type]
    window = MainWindow(AppSettings(scan_other_apps=False), LanguageSwitcher(), detect=False)
    window.resize(1280, 860)
    inventory = detect(measure=False)
    window.set_detected(inventory)
    window.show()
    window.show_page("home")
    _pump(300)
    table = window.home.gpu_table
    rows = [[table.item(r, c).text() if table.item(r, c) else "" for c in range(2)]
            for r in range(table.rowCount())]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    window.grab().save(str(out / "home-vulkan.png"))
    demo = demo_model_path()
    window.select_model(Path(demo))
    _wait(window.plan.sig_plan_shown, 60)
    _pump(300)
    page = window.plan
    window.grab().save(str(out / "plan-vulkan.png"))
    bars = {b.device_id: {k: b.bytes_of(k) for k in ("weights", "experts", "kv", "compute")}
            for b in page.memory_map.bars()}
    doc = page.last_plan.to_json()
    label = page.fit_label.text()
    spec = LaunchSpec.from_plan_engine(str(demo), doc["engine"]).with_changes(
        warm_up=False, n_threads=2, n_threads_batch=2)
    measured = gm.per_device(gm.parse_log(gm.load_and_measure(spec)),
                             gm.engine_names(inventory, doc["engine"]))
    window.shutdown()
    return {"home_rows": rows, "bars": bars, "fit_label": label,
            "gpu_overhead_bytes": GPU_OVERHEAD_BYTES, "measured": measured,
            "screenshots": [str(out / "home-vulkan.png"), str(out / "plan-vulkan.png")]}


def main(argv: list[str]) -> int:
    gm.activate_gpu_engine()
    job, rest = argv[0], argv[1:]
    result: dict[str, Any]
    if job == "devices":
        result = devices()
    elif job == "memory":
        result = memory(rest)
    elif job == "answer":
        result = answer(rest)
    elif job == "capped":
        result = capped(int(rest[0]))
    elif job == "oom":
        result = oom(int(rest[0]))
    elif job == "dryrun":
        # "half" before "wrong", which leaves the memory model made wrong in this process
        result = {"right": dryrun(False), "half": dryrun_half(), "wrong": dryrun(True)}
    elif job == "split":
        result = split(rest[0])
    elif job == "app":
        result = app(rest[0])
    else:
        print(f"unknown job {job!r}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
