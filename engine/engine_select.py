"""Which llama.cpp engine build to run: the one that matches this machine's GPUs.

A bundle carries several builds of ``llama_cpp`` side by side, one folder per backend
(``engines/cpu/llama_cpp``, ``engines/cuda/llama_cpp`` ...), each with an ``engine.json``
manifest written by ``packaging/engine_builds.py``. Before anything imports ``llama_cpp``
the launcher calls :func:`select_and_activate`: it looks at the GPUs (PCI vendors, NVML)
and at which GPU runtimes load (``libcuda.so.1``, ``libamdhip64``, ``libvulkan``), picks
a build with :func:`choose` and puts its folder first on ``sys.path``. No GPU build that
can run means the CPU build, with the reason as a code (``no_gpu``, ``driver_missing``,
``not_installed``) and a sentence. The user's choice (``LOADOUT_ENGINE`` for one run, or
:func:`save_preference`) wins whenever that build can run.

Without an engines folder (a developer's virtual environment) the installed ``llama_cpp``
is the build, unless ``$LOADOUT_ENGINE`` names one that ``python3 dev.py setup --engine
NAME`` staged into the environment's own ``engines/`` folder (:func:`activate_requested`).
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import platform
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import EngineBuildError
from engine.hardware.sysfs import pci_displays
from engine.paths import paths
from planner.inventory import Vendor

log = logging.getLogger(__name__)

ENGINE_ENV = "LOADOUT_ENGINE"            # a backend name, or "auto"
ENGINES_DIR_ENV = "LOADOUT_ENGINES_DIR"  # where the builds live (the bundle sets it)
ACTIVE_ENV = "LOADOUT_ENGINE_ACTIVE"     # set on activation, read by child processes
REASON_ENV = "LOADOUT_ENGINE_REASON"
MANIFEST = "engine.json"
PREFERENCE_FILE = "engine.json"
AUTO = "auto"

BACKENDS: tuple[str, ...] = ("cuda", "hip", "metal", "vulkan", "cpu")  # best first
_FOR_VENDOR: dict[Vendor, tuple[str, ...]] = {
    Vendor.NVIDIA: ("cuda", "vulkan"),
    Vendor.AMD: ("hip", "vulkan"),
    Vendor.INTEL: ("vulkan",),
    Vendor.APPLE: ("metal",),
}
_PCI_VENDORS = {0x10DE: Vendor.NVIDIA, 0x1002: Vendor.AMD, 0x8086: Vendor.INTEL}
# The libraries a GPU build needs from the user's driver; the first that loads will do.
RUNTIME_LIBRARIES: dict[str, dict[str, tuple[str, ...]]] = {
    "cuda": {"linux": ("libcuda.so.1",), "win32": ("nvcuda.dll",)},
    "hip": {"linux": ("libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so"),
            "win32": ("amdhip64_7.dll", "amdhip64_6.dll")},
    "vulkan": {"linux": ("libvulkan.so.1",), "win32": ("vulkan-1.dll",),
               "darwin": ("libvulkan.1.dylib", "libMoltenVK.dylib")},
}
SENTENCES = {
    "user_choice": "{backend} engine, as chosen in settings",
    "matches_gpu": "{backend} engine for the {vendors} GPU found",
    "no_gpu": "CPU engine: no GPU found",
    "gpu_unusable": "CPU engine: no engine build can use the {vendors} GPU ({why})",
    "only_build": "the installed engine (no other builds to choose from)",
    "not_installed": "this bundle has no {backend} engine",
    "driver_missing": "the {backend} runtime of the GPU driver is not installed",
    "wrong_platform": "the {backend} engine was built for another system",
    "no_device": "the {backend} engine found no GPU it can use (driver too old?)",
}
GPU_BACKENDS = frozenset({"cuda", "hip", "vulkan", "metal"})


@dataclass(frozen=True)
class EngineBuild:
    """One engine build: ``folder`` holds its ``llama_cpp`` package."""

    backend: str
    folder: Path
    engine: str = ""
    cmake_args: str = ""
    platform: str = ""

    @property
    def lib_dir(self) -> Path:
        """The folder with the build's shared libraries (``libllama``, ``libggml*``)."""
        return self.folder / "llama_cpp" / "lib"


@dataclass(frozen=True)
class Machine:
    """What the choice looks at: GPU vendors present and GPU runtimes that load."""

    vendors: tuple[Vendor, ...]
    runtimes: frozenset[str]
    platform: str = sys.platform


@dataclass(frozen=True)
class EngineChoice:
    """The build to run and why: ``reason`` is a code, :meth:`sentence` says it in words.

    ``rejected`` lists the builds considered and not taken, as ``(backend, code)``.
    ``build`` is ``None`` when there is nothing to choose (the installed engine is used).
    """

    build: EngineBuild | None
    reason: str
    vendors: tuple[Vendor, ...] = ()
    rejected: tuple[tuple[str, str], ...] = field(default=())

    @property
    def backend(self) -> str:
        """The chosen backend name, or ``installed`` when no bundle build is used."""
        return self.build.backend if self.build else "installed"

    def sentence(self) -> str:
        """The reason as one English sentence (the CLI prints it; the GUI translates codes)."""
        why = "; ".join(SENTENCES[code].format(backend=b, vendors="", why="")
                        for b, code in self.rejected if code in SENTENCES)
        names = ", ".join(str(v) for v in self.vendors) or "no"
        return SENTENCES[self.reason].format(backend=self.backend, vendors=names,
                                             why=why or "none installed")


def _usable(build: EngineBuild, machine: Machine,
            no_device: frozenset[str] = frozenset()) -> str | None:
    """``None`` when ``build`` can run here, else the reason code why not."""
    if build.platform and build.platform != machine.platform:
        return "wrong_platform"
    if build.backend in no_device:
        return "no_device"
    if build.backend in ("cpu", "metal") or build.backend in machine.runtimes:
        return None
    return "driver_missing"


def choose(builds: Sequence[EngineBuild], machine: Machine, wanted: str | None = None,
           no_device: frozenset[str] = frozenset()) -> EngineChoice:
    """Pick the build to run. Pure: same builds, machine and wish, same choice.

    Args:
        builds: the builds installed (see :func:`discover`).
        machine: the GPU vendors and loadable runtimes (see :func:`detect_machine`).
        wanted: the user's backend, or ``None`` / ``"auto"`` to choose automatically.
        no_device: GPU builds known to see no GPU here (see ``engine.engine_probe``).

    Returns:
        The choice; a user's wish that cannot run falls back to the automatic choice,
        with the wish listed in ``rejected``.
    """
    by_name = {b.backend: b for b in builds}
    rejected: list[tuple[str, str]] = []
    if not builds:
        return EngineChoice(None, "only_build", machine.vendors)
    if wanted and wanted != AUTO:
        build = by_name.get(wanted)
        problem = "not_installed" if build is None else _usable(build, machine, no_device)
        if build is not None and problem is None:
            return EngineChoice(build, "user_choice", machine.vendors)
        rejected.append((wanted, problem or "not_installed"))
    for backend in _candidates(machine.vendors):
        build = by_name.get(backend)
        problem = "not_installed" if build is None else _usable(build, machine, no_device)
        if build is not None and problem is None:
            return EngineChoice(build, "matches_gpu", machine.vendors, tuple(rejected))
        if (backend, problem or "") not in rejected:
            rejected.append((backend, problem or "not_installed"))
    reason = "gpu_unusable" if machine.vendors else "no_gpu"
    cpu = by_name.get("cpu")
    if cpu is None:  # a bundle without a CPU build: take any build that can run
        cpu = next((b for b in builds if _usable(b, machine, no_device) is None), builds[0])
    return EngineChoice(cpu, reason, machine.vendors, tuple(rejected))


def _candidates(vendors: Iterable[Vendor]) -> list[str]:
    wanted = {b for v in vendors for b in _FOR_VENDOR.get(v, ())}
    return [b for b in BACKENDS if b in wanted]


def discover(root: Path) -> list[EngineBuild]:
    """The builds under ``root`` (one folder each, with ``engine.json`` and ``llama_cpp``)."""
    found: list[EngineBuild] = []
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return found
    for folder in folders:
        try:
            meta = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not (folder / "llama_cpp" / "__init__.py").is_file():
            log.warning("engine build %s has no llama_cpp package; skipped", folder)
            continue
        found.append(EngineBuild(backend=str(meta.get("backend", folder.name)), folder=folder,
                                 engine=str(meta.get("engine", "")),
                                 cmake_args=str(meta.get("cmake_args", "")),
                                 platform=str(meta.get("platform", ""))))
    order = {b: i for i, b in enumerate(BACKENDS)}
    return sorted(found, key=lambda b: order.get(b.backend, len(order)))


def engines_dir() -> Path | None:
    """Where the bundle keeps its builds: ``$LOADOUT_ENGINES_DIR`` or ``engines/`` beside
    the frozen executable (its ``_internal`` folder); ``None`` outside a bundle."""
    override = os.environ.get(ENGINES_DIR_ENV)
    if override:
        return Path(override)
    if getattr(sys, "frozen", False):
        base = Path(getattr(sys, "_MEIPASS", Path(sys.executable).parent))
        return base / "engines"
    return None


def dev_engines_dir() -> Path:
    """Where ``dev.py setup --engine NAME`` stages extra builds: ``<venv>/engines``."""
    return Path(sys.prefix) / "engines"


def activate_requested(root: Path | None = None) -> EngineBuild | None:
    """Outside a bundle, activate the build ``$LOADOUT_ENGINE`` names from ``root``
    (default ``$LOADOUT_ENGINES_DIR``, else :func:`dev_engines_dir`); ``None`` (the
    installed engine) for ``auto``, and for ``cpu`` when ``root`` has no CPU build. Called
    before anything imports ``llama_cpp``.

    Raises:
        EngineBuildError: the named build is not in ``root``, or ``llama_cpp`` was
            already loaded from another build.
    """
    wanted = os.environ.get(ENGINE_ENV, "")
    if getattr(sys, "frozen", False) or wanted in ("", AUTO, "installed"):
        return None
    root = root if root is not None else (engines_dir() or dev_engines_dir())
    build = next((b for b in discover(root) if b.backend == wanted), None)
    if build is None and wanted == "cpu":
        return None  # the installed engine is the CPU build
    if build is None:
        raise EngineBuildError(f"{ENGINE_ENV}={wanted}: no such engine build in {root} "
                               f"(python3 dev.py setup --engine {wanted} makes it)")
    inherited = os.environ.get(ACTIVE_ENV) == wanted and REASON_ENV in os.environ
    activate(build)
    if not inherited:
        os.environ[REASON_ENV] = "user_choice"
    return build


def _default_loader(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def detect_machine(sys_root: Path = Path("/sys"), nvml: Any | None = None,
                   loader: Callable[[str], bool] = _default_loader,
                   system: str = sys.platform, machine: str = "") -> Machine:
    """The GPU vendors present and the GPU runtimes that load, without importing llama_cpp.

    Vendors come from PCI display devices (Linux sysfs), NVML, Apple silicon, and on
    Windows from the driver libraries that load. Each probe failing means "not seen".
    """
    vendors: list[Vendor] = []
    if system == "linux":
        vendors += [_PCI_VENDORS[d.vendor] for d in pci_displays(sys_root)
                    if d.vendor in _PCI_VENDORS]
    if _nvml_count(nvml) > 0:
        vendors.append(Vendor.NVIDIA)
    if system == "darwin" and (machine or platform.machine()) == "arm64":
        vendors.append(Vendor.APPLE)
    runtimes = frozenset(backend for backend, names in RUNTIME_LIBRARIES.items()
                         if any(loader(n) for n in names.get(system, ())))
    if system == "win32":
        vendors += [v for v, b in ((Vendor.NVIDIA, "cuda"), (Vendor.AMD, "hip"))
                    if b in runtimes]
    unique = tuple(dict.fromkeys(vendors))
    return Machine(vendors=unique, runtimes=runtimes, platform=system)


def _nvml_count(nvml: Any | None) -> int:
    if nvml is None:
        from engine.hardware.nvidia import load_nvml

        nvml = load_nvml()
    if nvml is None:
        return 0
    try:
        nvml.nvmlInit()
        try:
            return int(nvml.nvmlDeviceGetCount())
        finally:
            nvml.nvmlShutdown()
    except Exception as exc:  # no driver, mismatched library: the GPU is not usable
        log.info("NVML not usable for engine selection: %s", exc)
        return 0


def load_preference() -> str | None:
    """The backend the user chose in settings, or ``None`` for automatic."""
    try:
        data = json.loads((paths().config / PREFERENCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("engine") if isinstance(data, dict) else None
    return str(value) if value and value != AUTO else None


def save_preference(backend: str | None) -> None:
    """Remember the user's backend (``None`` or ``"auto"``: choose automatically).

    Takes effect at the next start: an engine build cannot change inside a process.
    """
    folder = paths().ensure().config
    value = backend if backend and backend != AUTO else AUTO
    (folder / PREFERENCE_FILE).write_text(json.dumps({"engine": value}) + "\n",
                                          encoding="utf-8")


def activate(build: EngineBuild) -> None:
    """Make ``import llama_cpp`` load ``build``: its folder first on ``sys.path`` and the
    library paths llama-cpp-python honours (``LLAMA_CPP_LIB_PATH``, ``MTMD_CPP_LIB``).

    Raises:
        EngineBuildError: ``llama_cpp`` was already imported (from another build).
    """
    loaded = sys.modules.get("llama_cpp")
    if loaded is not None:
        where = Path(getattr(loaded, "__file__", "") or "").resolve()
        if build.folder.resolve() in where.parents:
            return
        raise EngineBuildError(f"llama_cpp is already loaded from {where}; the "
                               f"{build.backend} engine can only be chosen before that")
    folder = str(build.folder)
    if folder in sys.path:
        sys.path.remove(folder)
    sys.path.insert(0, folder)
    os.environ["LLAMA_CPP_LIB_PATH"] = str(build.lib_dir)
    os.environ["MTMD_CPP_LIB"] = str(build.lib_dir)
    os.environ[ACTIVE_ENV] = build.backend


def select_and_activate(root: Path | None = None, wanted: str | None = None,
                        machine: Machine | None = None,
                        verify: Callable[[EngineBuild, Machine], bool] | None = None
                        ) -> EngineChoice:
    """Choose the engine build for this machine and activate it (see the module docstring).

    ``wanted`` defaults to ``$LOADOUT_ENGINE``, then the saved preference. Child processes
    inherit the choice through ``LOADOUT_ENGINE``, so every process runs the same build.
    ``verify`` (``engine.engine_probe.sees_gpu``) checks that a chosen GPU build sees a GPU;
    one that does not is passed over with ``no_device``.
    """
    root = root if root is not None else engines_dir()
    builds = discover(root) if root is not None else []
    if not builds:
        return EngineChoice(None, "only_build")
    wish = wanted or os.environ.get(ENGINE_ENV) or load_preference()
    machine = machine or detect_machine()
    no_device: set[str] = set()
    choice = choose(builds, machine, wish)
    while (verify is not None and choice.build is not None
           and choice.build.backend in GPU_BACKENDS - no_device
           and not verify(choice.build, machine)):
        no_device.add(choice.build.backend)
        choice = choose(builds, machine, wish, frozenset(no_device))
    assert choice.build is not None
    inherited = os.environ.get(ACTIVE_ENV) == choice.build.backend and REASON_ENV in os.environ
    activate(choice.build)
    os.environ[ENGINE_ENV] = choice.build.backend
    if not inherited:  # a child process keeps the parent's reason, not "user_choice"
        os.environ[REASON_ENV] = choice.reason
    log.info("engine build: %s (%s)", choice.backend, choice.sentence())
    return choice


def active() -> tuple[str, str] | None:
    """The engine build this process activated and the reason code, for display (the app
    shows the reason when it fell back to the CPU build); ``None`` outside a bundle."""
    backend, reason = os.environ.get(ACTIVE_ENV), os.environ.get(REASON_ENV)
    return (backend, reason) if backend and reason else None


def loadout_command() -> list[str]:
    """How to start another ``loadout`` process (the engine process, a worker) from this one.

    In a frozen bundle that is the bundle's console executable (there is no ``python -m``;
    on Windows and macOS the windowed ``Loadout`` has ``loadout-cli`` beside it);
    elsewhere this interpreter with ``-m loadout``. The child inherits the engine build
    chosen here through ``LOADOUT_ENGINE``.
    """
    if getattr(sys, "frozen", False):
        console = Path(sys.executable).with_name(
            "loadout-cli.exe" if sys.platform == "win32" else "loadout-cli")
        return [str(console)] if console.is_file() else [sys.executable]
    return [sys.executable, "-m", "loadout"]
