"""The cross-check with the engine's device list: Apple, Intel, Vulkan-only, duplicates."""

from __future__ import annotations

import re
from pathlib import Path

from engine.ggml_devices import EngineDevice, engine_devices
from engine.hardware import Sources, detect
from engine.hardware.apple import apple_gpu, gpu_share
from engine.hardware.engine_devices import backend_of, cross_check, vendor_of
from planner.inventory import Backend, Vendor
from tests.engine.test_hardware_nvidia import FakeNvml, fake_sys_with_nvidia, rtx3060, rtx4090

GIB = 2**30


def test_the_real_engine_build_is_cross_checked() -> None:
    # This machine's build is CPU-only: the engine adds no GPU and reports RAM like psutil.
    devices = engine_devices()
    assert any(d.kind == "cpu" for d in devices)
    inv = detect(model_dirs=[], measure=False)
    engine_gpus = [d for d in devices if d.kind in ("gpu", "igpu")]
    assert len(inv.gpus) == len(engine_gpus)
    assert "engine_ram_mismatch" not in inv.notes
    assert "engine_devices_unavailable" not in inv.notes


def test_apple_gpu_comes_from_the_metal_device() -> None:
    share = 48 * GIB  # recommendedMaxWorkingSetSize of a 64 GB M2 Max
    result = cross_check([], [EngineDevice(0, "MTL0", "Apple M2 Max", "gpu", share, share),
                              EngineDevice(1, "CPU", "Apple M2 Max", "cpu", 0, 0)])
    (gpu,) = result.gpus
    assert (gpu.vendor, gpu.backend, gpu.engine_device) == (Vendor.APPLE, Backend.METAL, "MTL0")
    assert gpu.unified_memory and gpu.total_bytes == share
    assert gpu.bandwidth_gbps == 400 and "bandwidth_nominal" in gpu.notes


def test_apple_estimate_is_replaced_by_the_engine_figures() -> None:
    estimate = apple_gpu("Apple M3 Pro", ram_total=36 * GIB, ram_available=20 * GIB)
    assert estimate.total_bytes == gpu_share(36 * GIB) == 24 * GIB
    metal = EngineDevice(0, "MTL0", "Apple M3 Pro", "gpu", 27 * GIB, 27 * GIB)
    (gpu,) = cross_check([estimate], [metal]).gpus
    assert gpu.engine_device == "MTL0" and gpu.total_bytes == 27 * GIB
    assert "gpu_share_estimated" not in gpu.notes


def test_gpu_share_is_larger_on_big_macs() -> None:
    assert gpu_share(16 * GIB) / (16 * GIB) < gpu_share(128 * GIB) / (128 * GIB)


def test_intel_arc_on_vulkan_is_added_from_the_engine() -> None:
    arc = EngineDevice(0, "Vulkan0", "Intel(R) Arc(TM) A770 Graphics (DG2)", "gpu",
                       15 * GIB, 16 * GIB)
    igpu = EngineDevice(1, "Vulkan1", "Intel(R) UHD Graphics 770 (ADL-S GT1)", "igpu",
                        30 * GIB, 32 * GIB)
    a, b = cross_check([], [arc, igpu]).gpus
    assert (a.vendor, a.backend, a.bandwidth_gbps) == (Vendor.INTEL, Backend.VULKAN, 560)
    assert not a.unified_memory and "seen_by_engine_only" in a.notes
    assert b.unified_memory and "bandwidth_unknown" in b.notes
    assert (a.index, b.index) == (0, 1)


def test_nvidia_on_a_vulkan_build_keeps_its_nvml_figures(tmp_path: Path) -> None:
    big, small = rtx4090(), rtx3060()
    vulkan = [EngineDevice(0, "Vulkan0", "NVIDIA GeForce RTX 3060", "gpu", small.free,
                           small.total),
              EngineDevice(1, "Vulkan1", "NVIDIA GeForce RTX 4090", "gpu", big.free,
                           big.total)]
    inv = detect(model_dirs=[], measure=False, sources=Sources(
        nvml=FakeNvml([big, small]), sys_root=fake_sys_with_nvidia(tmp_path, 2),
        engine_devices=lambda: vulkan))
    assert [(g.engine_device, g.name) for g in inv.gpus] == [
        ("Vulkan0", small.name), ("Vulkan1", big.name)]
    assert all(g.backend is Backend.VULKAN and "engine_backend_vulkan" in g.notes
               for g in inv.gpus)
    assert inv.gpus[1].bandwidth_gbps > 1000  # NVML's driver peak, not a default


def test_a_gpu_missing_from_the_engine_is_noted() -> None:
    from engine.hardware import nvidia

    found = nvidia.probe(FakeNvml([rtx4090(), rtx3060()])).gpus
    only_one = [EngineDevice(0, "CUDA0", "NVIDIA GeForce RTX 4090", "gpu", 20 * GIB, 24 * GIB)]
    result = cross_check(found, only_one)
    assert [g.engine_device for g in result.gpus] == ["CUDA0", ""]
    assert "not_seen_by_engine" in result.gpus[1].notes


def test_device_names_map_to_backends_and_vendors() -> None:
    assert backend_of("CUDA1") is Backend.CUDA
    assert backend_of("ROCm0") is Backend.ROCM
    assert backend_of("MTL0") is Backend.METAL
    assert backend_of("RPC[192.168.1.5:50052]") is Backend.RPC
    assert backend_of("BLAS") is None
    assert vendor_of("AMD Radeon RX 7900 XTX (RADV NAVI31)") is Vendor.AMD
    assert vendor_of("llvmpipe (LLVM 17.0.6, 256 bits)") is Vendor.OTHER


def test_a_software_vulkan_device_is_noted_as_such() -> None:
    lavapipe = EngineDevice(0, "Vulkan0", "llvmpipe (LLVM 15.0.6, 256 bits)", "gpu",
                            2 << 30, 2 << 30)
    arc = EngineDevice(1, "Vulkan1", "Intel(R) Arc(tm) A770 Graphics (DG2)", "gpu",
                       16 << 30, 16 << 30)
    gpus = cross_check([], [lavapipe, arc]).gpus
    assert "software_device" in gpus[0].notes and gpus[0].software
    assert "software_device" not in gpus[1].notes and not gpus[1].software


def test_quick_device_list_matches_the_bindings_and_skips_their_import() -> None:
    import subprocess
    import sys

    from engine.ggml_devices import engine_devices_quick

    quick = engine_devices_quick()
    assert [(d.name, d.kind, d.total_bytes) for d in quick] == \
        [(d.name, d.kind, d.total_bytes) for d in engine_devices()]
    probe = ("import sys; from engine.ggml_devices import engine_devices_quick as q; "
             "assert q(); print('llama_cpp' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.split() == ["False", "False"]


def _note_codes_in(path: Path) -> set[str]:
    """String constants a module writes as notes: ``notes.append(...)``, ``notes=...``,
    assignments to ``notes``/``code``, and the reason tables/returns of NVML errors."""
    import ast

    found: set[str] = set()

    def collect(node: ast.AST) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                found.add(sub.value.split(":")[0])
            elif isinstance(sub, ast.JoinedStr) and sub.values and \
                    isinstance(sub.values[0], ast.Constant):
                found.add(str(sub.values[0].value).split(":")[0])

    def named(target: ast.AST) -> str:
        return target.id if isinstance(target, ast.Name) else \
            target.attr if isinstance(target, ast.Attribute) else ""

    wanted = ("notes", "code", "_INIT_REASONS")

    def value_of(node: ast.AST) -> ast.AST | None:
        if isinstance(node, ast.keyword):
            return node.value if node.arg == "notes" else None
        if isinstance(node, ast.Assign):
            return node.value if any(named(t) in wanted for t in node.targets) else None
        if isinstance(node, ast.AnnAssign):
            return node.value if named(node.target) in wanted else None
        return None

    for node in ast.walk(ast.parse(path.read_text())):
        parts: list[ast.AST] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("append", "extend") and "notes" in named(node.func.value):
            parts = list(node.args)
        elif isinstance(node, ast.FunctionDef) and node.name == "_reason":
            parts = [r.value for r in ast.walk(node) if isinstance(r, ast.Return) and r.value]
        elif (value := value_of(node)) is not None:
            parts = [value]
        for part in parts:
            collect(part)
    return {c for c in found if re.fullmatch(r"[a-z][a-z0-9_]+", c) and c.islower()
            and not c.startswith("NVML") and "_" in c}


def test_every_note_code_in_the_detection_sources_is_explained() -> None:
    from engine.hardware.codes import EXPLANATIONS, explain

    folder = Path(__file__).resolve().parents[2] / "engine" / "hardware"
    emitted: set[str] = set()
    for module in folder.glob("*.py"):
        if module.name != "codes.py":
            emitted |= _note_codes_in(module)
    assert {"gpu_lost", "nvml_version_mismatch", "read_nominal", "mig_instance"} <= emitted
    # "engine_backend_{name}": a prefix whose every completion must be explained
    prefixes = {c for c in emitted if c.endswith("_")}
    assert all(any(k.startswith(p) for k in EXPLANATIONS) for p in prefixes)
    assert sorted(emitted - prefixes - set(EXPLANATIONS)) == []
    assert explain("gpu_lost:3") == EXPLANATIONS["gpu_lost"] and explain("nope") == ""


def test_the_cpu_device_reports_the_memory_the_os_has_free() -> None:
    import psutil

    # ggml's CPU device says free == total; the host's free memory is MemAvailable's
    cpu = next(d for d in engine_devices() if d.kind == "cpu")
    available = psutil.virtual_memory().available
    assert 0 < cpu.free_bytes < cpu.total_bytes
    assert abs(cpu.free_bytes - available) < 512 << 20
