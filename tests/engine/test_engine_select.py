"""Engine build selection: which ``llama_cpp`` build a bundle runs on which machine.

The machine side is faked only where hardware is absent here: a sysfs tree with PCI
display devices, an NVML module, a loader that says which driver libraries exist. The
activation tests import the real ``llama_cpp`` in a fresh process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from engine import engine_select as es
from engine.errors import EngineBuildError
from planner.inventory import Vendor

ROOT = Path(__file__).resolve().parents[2]


def _builds(*names: str, platform: str = "") -> list[es.EngineBuild]:
    return [es.EngineBuild(n, Path("/engines") / n, platform=platform) for n in names]


def _machine(*vendors: Vendor, runtimes: tuple[str, ...] = (),
             system: str = "linux") -> es.Machine:
    return es.Machine(vendors=vendors, runtimes=frozenset(runtimes), platform=system)


ALL = _builds("cpu", "cuda", "hip", "vulkan")


def test_nvidia_gpu_with_driver_gets_the_cuda_build() -> None:
    choice = es.choose(ALL, _machine(Vendor.NVIDIA, runtimes=("cuda", "vulkan")))
    assert (choice.backend, choice.reason) == ("cuda", "matches_gpu")
    assert "cuda engine for the nvidia GPU" in choice.sentence()


def test_amd_gpu_with_rocm_gets_the_hip_build() -> None:
    choice = es.choose(ALL, _machine(Vendor.AMD, runtimes=("hip", "vulkan")))
    assert choice.backend == "hip"


def test_nvidia_without_cuda_driver_falls_to_vulkan_and_says_why() -> None:
    choice = es.choose(ALL, _machine(Vendor.NVIDIA, runtimes=("vulkan",)))
    assert (choice.backend, choice.reason) == ("vulkan", "matches_gpu")
    assert ("cuda", "driver_missing") in choice.rejected


def test_gpu_no_build_can_use_falls_back_to_cpu_with_a_visible_reason() -> None:
    choice = es.choose(_builds("cpu", "cuda"), _machine(Vendor.AMD, runtimes=("hip",)))
    assert (choice.backend, choice.reason) == ("cpu", "gpu_unusable")
    assert set(choice.rejected) == {("hip", "not_installed"), ("vulkan", "not_installed")}
    assert "no engine build can use the amd GPU" in choice.sentence()
    assert "this bundle has no hip engine" in choice.sentence()


def test_machine_without_gpu_runs_the_cpu_build() -> None:
    choice = es.choose(ALL, _machine(runtimes=("vulkan",)))
    assert (choice.backend, choice.reason) == ("cpu", "no_gpu")
    assert choice.sentence() == "CPU engine: no GPU found"


def test_intel_gpu_gets_vulkan() -> None:
    assert es.choose(ALL, _machine(Vendor.INTEL, runtimes=("vulkan",))).backend == "vulkan"


def test_apple_silicon_gets_metal() -> None:
    builds = _builds("cpu", "metal")
    assert es.choose(builds, _machine(Vendor.APPLE, system="darwin")).backend == "metal"


def test_the_users_choice_wins_when_it_can_run() -> None:
    machine = _machine(Vendor.NVIDIA, runtimes=("cuda", "vulkan"))
    choice = es.choose(ALL, machine, wanted="vulkan")
    assert (choice.backend, choice.reason) == ("vulkan", "user_choice")
    assert es.choose(ALL, machine, wanted="cpu").backend == "cpu"


def test_a_choice_that_cannot_run_falls_back_and_is_listed() -> None:
    machine = _machine(runtimes=())
    choice = es.choose(ALL, machine, wanted="cuda")
    assert (choice.backend, choice.reason) == ("cpu", "no_gpu")
    assert choice.rejected == (("cuda", "driver_missing"),)
    missing = es.choose(_builds("cpu"), machine, wanted="metal")
    assert missing.rejected == (("metal", "not_installed"),)


def test_auto_is_no_wish() -> None:
    machine = _machine(Vendor.NVIDIA, runtimes=("cuda",))
    assert es.choose(ALL, machine, wanted="auto").reason == "matches_gpu"


def test_a_build_for_another_system_is_never_taken() -> None:
    builds = [*_builds("cpu"), *_builds("cuda", platform="win32")]
    choice = es.choose(builds, _machine(Vendor.NVIDIA, runtimes=("cuda",)))
    assert choice.backend == "cpu"
    assert ("cuda", "wrong_platform") in choice.rejected


def test_a_gpu_build_that_sees_no_gpu_is_passed_over() -> None:
    machine = _machine(Vendor.NVIDIA, runtimes=("cuda", "vulkan"))
    choice = es.choose(ALL, machine, no_device=frozenset({"cuda"}))
    assert (choice.backend, choice.rejected) == ("vulkan", (("cuda", "no_device"),))
    both = es.choose(ALL, machine, wanted="cuda", no_device=frozenset({"cuda", "vulkan"}))
    assert (both.backend, both.reason) == ("cpu", "gpu_unusable")
    assert "found no GPU it can use" in both.sentence()


def test_no_builds_means_the_installed_engine() -> None:
    choice = es.choose([], _machine(Vendor.NVIDIA, runtimes=("cuda",)))
    assert (choice.build, choice.reason) == (None, "only_build")


def _pci(root: Path, bus: str, klass: int, vendor: int) -> None:
    dev = root / "bus" / "pci" / "devices" / bus
    dev.mkdir(parents=True)
    (dev / "class").write_text(f"0x{klass:06x}\n")
    (dev / "vendor").write_text(f"0x{vendor:04x}\n")
    (dev / "device").write_text("0x1234\n")


def test_detect_reads_pci_vendors_and_loadable_runtimes(tmp_path: Path) -> None:
    _pci(tmp_path, "0000:01:00.0", 0x030000, 0x10DE)  # NVIDIA VGA
    _pci(tmp_path, "0000:02:00.0", 0x038000, 0x1002)  # AMD 3D controller
    _pci(tmp_path, "0000:03:00.0", 0x020000, 0x8086)  # Intel NIC: not a display
    loaded: list[str] = []

    def loader(name: str) -> bool:
        loaded.append(name)
        return name == "libvulkan.so.1"

    machine = es.detect_machine(tmp_path, nvml=None, loader=loader, system="linux")
    assert machine.vendors == (Vendor.NVIDIA, Vendor.AMD)
    assert machine.runtimes == frozenset({"vulkan"})
    assert "libcuda.so.1" in loaded


def test_detect_counts_nvml_gpus_and_survives_a_broken_nvml(tmp_path: Path) -> None:
    class NVMLError(Exception):
        pass

    def broken() -> None:
        raise NVMLError("driver not loaded")

    working = SimpleNamespace(nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 2,
                              nvmlShutdown=lambda: None)
    failing = SimpleNamespace(nvmlInit=broken, nvmlShutdown=lambda: None)
    found = es.detect_machine(tmp_path, nvml=working, loader=lambda n: False, system="linux")
    assert found.vendors == (Vendor.NVIDIA,)
    none = es.detect_machine(tmp_path, nvml=failing, loader=lambda n: False, system="linux")
    assert none.vendors == ()


def test_detect_on_windows_infers_vendors_from_driver_libraries(tmp_path: Path) -> None:
    def loader(name: str) -> bool:
        return name in ("nvcuda.dll", "vulkan-1.dll")

    machine = es.detect_machine(tmp_path, nvml=SimpleNamespace(), loader=loader,
                                system="win32")
    assert machine.vendors == (Vendor.NVIDIA,)
    assert machine.runtimes == frozenset({"cuda", "vulkan"})


def test_detect_reports_cuda_exactly_when_the_driver_library_exists() -> None:
    import ctypes.util

    has_driver = ctypes.util.find_library("cuda") is not None
    assert ("cuda" in es.detect_machine().runtimes) == has_driver


def _stage(root: Path, backend: str, package: Path | None = None, **meta: Any) -> Path:
    folder = root / backend
    folder.mkdir(parents=True)
    if package is None:
        (folder / "llama_cpp").mkdir()
        (folder / "llama_cpp" / "__init__.py").write_text("")
    else:
        (folder / "llama_cpp").symlink_to(package, target_is_directory=True)
    (folder / es.MANIFEST).write_text(json.dumps({"backend": backend, **meta}))
    return folder


def test_discover_lists_staged_builds_best_first(tmp_path: Path) -> None:
    _stage(tmp_path, "cpu", cmake_args="-DGGML_RPC=ON", platform=sys.platform)
    _stage(tmp_path, "cuda")
    (tmp_path / "half").mkdir()  # no manifest: not a build
    no_package = tmp_path / "vulkan"
    no_package.mkdir()
    (no_package / es.MANIFEST).write_text('{"backend": "vulkan"}')
    builds = es.discover(tmp_path)
    assert [b.backend for b in builds] == ["cuda", "cpu"]
    assert builds[1].cmake_args == "-DGGML_RPC=ON"
    assert builds[1].lib_dir == tmp_path / "cpu" / "llama_cpp" / "lib"
    assert es.discover(tmp_path / "absent") == []


def test_preference_is_saved_in_the_config_folder(loadout_home: Path) -> None:
    assert es.load_preference() is None
    es.save_preference("vulkan")
    assert es.load_preference() == "vulkan"
    assert json.loads((loadout_home / "config" / "engine.json").read_text()) == {
        "engine": "vulkan"}
    es.save_preference(None)
    assert es.load_preference() is None


def test_activate_refuses_once_another_llama_cpp_is_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = SimpleNamespace(__file__=str(tmp_path / "elsewhere" / "llama_cpp" / "__init__.py"))
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    build = es.EngineBuild("cpu", tmp_path / "engines" / "cpu")
    with pytest.raises(EngineBuildError, match="already loaded"):
        es.activate(build)


def _installed_llama_cpp() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llama_cpp")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent


@pytest.mark.slow
def test_activated_build_is_the_llama_cpp_that_loads(tmp_path: Path) -> None:
    """A real import in a fresh process takes the chosen folder, libraries included."""
    engines = tmp_path / "engines"
    _stage(engines, "cpu", package=_installed_llama_cpp(), platform=sys.platform)
    _stage(engines, "cuda", package=_installed_llama_cpp(), platform="another-os")
    script = (
        "import json, os, sys\n"
        "from engine import engine_select as es\n"
        "c = es.select_and_activate()\n"
        "import llama_cpp\n"
        "from llama_cpp import llama_cpp as ll\n"
        "print(json.dumps({'backend': c.backend, 'reason': c.reason,\n"
        "  'rejected': c.rejected, 'module': llama_cpp.__file__,\n"
        "  'lib': ll._base_path.as_posix(), 'child': os.environ['LOADOUT_ENGINE'],\n"
        "  'active': es.active(),\n"
        "  'info': llama_cpp.llama_print_system_info().decode()}))\n"
    )
    # The user asks for a CUDA build made for another system, so the CPU build runs.
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{es.ENGINES_DIR_ENV: str(engines),
                                                    es.ENGINE_ENV: "cuda"})
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["backend"] == "cpu"
    assert result["rejected"][0] == ["cuda", "wrong_platform"]
    assert result["module"].startswith(str(engines / "cpu"))
    assert result["lib"] == (engines / "cpu" / "llama_cpp" / "lib").as_posix()
    assert result["child"] == "cpu"
    assert result["active"] == ["cpu", "no_gpu"] or result["active"][1] == "gpu_unusable"
    assert "CPU" in result["info"]


def test_child_processes_start_the_same_program(monkeypatch: pytest.MonkeyPatch) -> None:
    assert es.loadout_command() == [sys.executable, "-m", "loadout"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/loadout/loadout")
    assert es.loadout_command() == ["/opt/loadout/loadout"]


def test_a_windowed_bundle_starts_children_with_its_console_executable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    windowed = tmp_path / "Loadout"
    console = tmp_path / ("loadout-cli.exe" if sys.platform == "win32" else "loadout-cli")
    windowed.write_text("")
    console.write_text("")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(windowed))
    assert es.loadout_command() == [str(console)]


@pytest.mark.slow
def test_a_build_that_sees_no_gpu_falls_back_after_a_real_probe(tmp_path: Path) -> None:
    """An NVIDIA machine whose CUDA driver loads, but whose "cuda" build sees no GPU (here:
    the CPU engine under that name, as with a driver too old for the build): the probe
    process finds 0 GPUs, the CPU build is chosen, and the answer is remembered."""
    engines = tmp_path / "engines"
    _stage(engines, "cpu", package=_installed_llama_cpp(), platform=sys.platform)
    _stage(engines, "cuda", package=_installed_llama_cpp(), platform=sys.platform)
    script = (
        "import json\n"
        "from engine import engine_probe, engine_select as es\n"
        "from planner.inventory import Vendor\n"
        "m = es.Machine((Vendor.NVIDIA,), frozenset({'cuda'}))\n"
        "probes = []\n"
        "def probe(b):\n"
        "    probes.append(b.backend)\n"
        "    return engine_probe.run_probe(b)\n"
        "def verify(b, machine):\n"
        "    return engine_probe.sees_gpu(b, machine, probe)\n"
        "c = es.select_and_activate(machine=m, verify=verify)\n"
        "again = es.choose(es.discover(es.engines_dir()), m)\n"
        "known = engine_probe.sees_gpu(again.build, m, probe)\n"
        "print(json.dumps({'backend': c.backend, 'rejected': c.rejected,\n"
        "                  'probes': probes, 'known': known}))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{es.ENGINES_DIR_ENV: str(engines)})
    env.pop(es.ENGINE_ENV, None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=180, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["backend"] == "cpu"
    assert result["rejected"] == [["cuda", "no_device"], ["vulkan", "not_installed"]]
    assert result["probes"] == ["cuda"]  # probed once; the second question was cached
    assert result["known"] is False
