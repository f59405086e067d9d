#!/usr/bin/env python3
"""Set up Loadout in ./.venv and start it, or run the whole test suite.

    python3 dev.py start     # set up, then open Loadout on the embedded demo model
    python3 dev.py test      # set up, then run every check and test
    python3 dev.py setup --engine vulkan   # also build the Vulkan engine (.venv/engines)

Works on Linux, macOS and Windows (``py dev.py start``). Needs Python 3.11+ and a C/C++
compiler (the llama.cpp engine is built from source for this machine's backend; set
``CMAKE_ARGS`` for a GPU build, see README). Setup is skipped when nothing changed.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".loadout-setup"
DEFAULT_CMAKE_ARGS = "-DGGML_RPC=ON"
ENGINE = "llama-cpp-python==0.3.36"


def _venv_python() -> Path:
    if os.name == "nt":
        return VENV / "Scripts" / "python.exe"
    return VENV / "bin" / "python"


def _run(cmd: list[str], **kwargs: object) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call(cmd, cwd=ROOT, **kwargs)  # type: ignore[arg-type]


def _setup_key(extras: str) -> str:
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update(extras.encode())
    return digest.hexdigest()


def _engine_cmake_args() -> str:
    """CMAKE_ARGS for the llama.cpp build: the user's, else a native CPU build with RPC.

    On x86-64 Linux the AMX tile kernels are left out: virtual machines that advertise AMX
    but do not enable it crash on the first matrix product (SIGILL in tilezero).
    """
    user = os.environ.get("CMAKE_ARGS")
    if user:
        return user
    args = DEFAULT_CMAKE_ARGS
    if sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64"):
        args += ' -DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"'
        args += ' -DCMAKE_CXX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"'
    return args


def _engine_wheel(py: Path, cmake_args: str) -> Path:
    """Build (once per CMAKE_ARGS) and return the llama-cpp-python wheel for this machine.

    pip's own cache ignores CMAKE_ARGS, so a GPU build could silently reuse a CPU wheel;
    we keep our own cache keyed by the arguments instead.
    """
    key = hashlib.sha256(f"{ENGINE}|{cmake_args}|{platform.machine()}".encode()).hexdigest()
    base = Path(os.environ.get("LOADOUT_ENGINE_CACHE",
                               Path.home() / ".cache" / "loadout-engine"))
    folder = base / key[:16]
    wheels = sorted(folder.glob("llama_cpp_python-*.whl"))
    if wheels:
        return wheels[0]
    folder.mkdir(parents=True, exist_ok=True)
    print(f"building the llama.cpp engine ({ENGINE}, CMAKE_ARGS={cmake_args}); "
          "this takes a few minutes once", flush=True)
    env = dict(os.environ, CMAKE_ARGS=cmake_args)
    cmd = [str(py), "-m", "pip", "wheel", "--no-cache-dir", "--no-deps", "-w", str(folder),
           ENGINE]
    if _run(cmd, env=env) != 0:
        sys.exit("building llama-cpp-python failed (see the compiler output above)")
    wheels = sorted(folder.glob("llama_cpp_python-*.whl"))
    if not wheels:
        sys.exit(f"the engine build left no wheel in {folder}")
    return wheels[0]


def setup(extras: str) -> Path:
    """Create the virtual environment and install Loadout (editable) with ``extras``."""
    if sys.version_info < (3, 11):  # noqa: UP036 (this script runs before any check)
        sys.exit(f"Loadout needs Python 3.11 or newer; this is {sys.version.split()[0]}")
    py = _venv_python()
    if not py.exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    cmake_args = _engine_cmake_args()
    key = _setup_key(extras + "|" + cmake_args)
    if STAMP.exists() and STAMP.read_text().strip() == key:
        return py
    if _run([str(py), "-m", "pip", "install", "-q", "--upgrade", "pip"]) != 0:
        sys.exit("could not upgrade pip in .venv")
    wheel = _engine_wheel(py, cmake_args)
    if _run([str(py), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps",
             str(wheel)]) != 0:
        sys.exit(f"installing the engine wheel {wheel} failed")
    print("installing Loadout and its dependencies", flush=True)
    target = f".[{extras}]" if extras else "."
    if _run([str(py), "-m", "pip", "install", "-q", "-e", target]) != 0:
        sys.exit("setup failed: see the pip output above")
    _build_translations(py)
    STAMP.write_text(key)
    return py


def _build_translations(py: Path) -> None:
    tool = ROOT / "i18n" / "build.py"
    if tool.exists() and _run([str(py), str(tool)]) != 0:
        sys.exit("building the translations failed")


def _cjk_fonts() -> None:
    # Screenshots of the Chinese UI need CJK glyphs; install them where we can (Debian/Ubuntu
    # as root). Elsewhere the tests still run; only the screenshots show boxes.
    if sys.platform != "linux" or not shutil.which("apt-get") or os.geteuid() != 0:
        return
    if Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc").exists():
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-q", "fonts-noto-cjk"]
    if subprocess.call(install, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL) != 0:
        subprocess.call(["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        subprocess.call(install, env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)


def _qt_libraries(py: Path) -> int:
    # Qt's X11 plugin aborts with a list of plugins when a system library is missing;
    # this says which package to install for this OS instead (0: nothing missing).
    if sys.platform != "linux":
        return 0
    return subprocess.call([str(py), "-m", "app.qt_libraries"], cwd=ROOT)


JOURNEY_PACKAGES = ("xvfb", "xdotool", "imagemagick", "libxcb-cursor0", "libxkbcommon-x11-0",
                    "libxcb-icccm4", "libxcb-image0", "libxcb-keysyms1",
                    "libxcb-render-util0", "libxcb-shape0", "libxcb-randr0", "libxcb-xkb1",
                    "libegl1", "libgl1", "libfontconfig1", "libdbus-1-3")


def _journey_x_packages() -> None:
    # The journeys (tests/journeys/) drive the real window on an X server: Xvfb, xdotool,
    # ImageMagick's import for screenshots, and the libraries Qt's X11 plugin needs.
    # Installed where we can (Debian/Ubuntu as root); elsewhere the journeys report that
    # they did not run, and why.
    if sys.platform != "linux" or not shutil.which("apt-get") or os.geteuid() != 0:
        return
    if all(shutil.which(tool) for tool in ("Xvfb", "xdotool", "import")) and any(
            Path(d, "libxcb-cursor.so.0").exists()
            for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib")):
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *JOURNEY_PACKAGES]
    if subprocess.call(install, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL) != 0:
        subprocess.call(["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        subprocess.call(install, env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)


def start(args: list[str]) -> int:
    py = setup("")
    if not args and _qt_libraries(py) != 0:
        return 1
    return _run([str(py), "-m", "loadout", *args])


def test(args: list[str]) -> int:
    py = setup("dev")
    _cjk_fonts()
    _journey_x_packages()
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    checks = [
        [str(py), "-m", "ruff", "check", "."],
        [str(py), "-m", "mypy", "planner", "engine", "app", "loadout"],
        # the same code as Windows and macOS see it: an OS-specific call outside a
        # sys.platform check fails here, not on a user's machine (own caches: the
        # platform is part of what mypy caches)
        *([str(py), "-m", "mypy", "--platform", system, "--cache-dir",
           str(Path(".mypy_cache") / system), "planner", "engine", "app", "loadout"]
          for system in ("win32", "darwin")),
        [str(VENV / ("Scripts" if os.name == "nt" else "bin") / "lint-imports")],
    ]
    for cmd in checks:
        if _run(cmd, env=env) != 0:
            print(f"FAILED: {' '.join(cmd)}", flush=True)
            return 1
    _gpu_test_engine(py, env)
    code = _run([str(py), "-m", "pytest", *args], env=env)
    if code == 5:
        print("FAILED: pytest collected no tests", flush=True)
        return 1
    return code


# -- extra engine builds (``setup --engine NAME``): staged into .venv/engines/NAME --------
ENGINES = VENV / "engines"
VULKAN_PACKAGES = ("mesa-vulkan-drivers", "libvulkan-dev", "glslc", "spirv-headers",
                   "glslang-tools", "vulkan-tools")
SYSTEM_PACKAGES = {"vulkan": VULKAN_PACKAGES}
VULKAN_TOOLS = ("glslc", "vulkaninfo")


def _apt_packages(packages: tuple[str, ...]) -> str | None:
    """Install Debian packages that are missing (as root, where apt-get exists).

    Returns ``None`` when all are installed, else why they are not.
    """
    missing = [p for p in packages if "ok installed" not in subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True).stdout]
    if not missing:
        return None
    if os.geteuid() != 0:
        return f"these system packages are missing (install them as root): {' '.join(missing)}"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if _run(["apt-get", "update", "-q"], env=env) != 0:
        return "apt-get update failed"
    if _run(["apt-get", "install", "-y", "-q", *missing], env=env) != 0:
        return f"apt-get install {' '.join(missing)} failed"
    return None


def extra_engine(py: Path, backend: str, jobs: int | None = None, nice: int = 0) -> str | None:
    """Build the ``backend`` engine once (cached by its CMake arguments) and stage it into
    ``.venv/engines/<backend>``, where ``LOADOUT_ENGINE=<backend>`` finds it.

    Returns ``None`` when the build is in place, else why it could not be made here.
    """
    manifest = ENGINES / backend / "engine.json"
    if manifest.exists():
        return None
    packages = SYSTEM_PACKAGES.get(backend, ())
    if packages:
        if sys.platform == "linux" and shutil.which("apt-get") and shutil.which("dpkg-query"):
            why = _apt_packages(packages)
            if why:
                return why
        elif backend == "vulkan" and not all(shutil.which(t) for t in VULKAN_TOOLS):
            return ("the Vulkan SDK is not installed (glslc and vulkaninfo not found) and "
                    "there is no apt-get to install it")
    jobs = jobs or int(os.environ.get("LOADOUT_BUILD_JOBS", os.cpu_count() or 1))
    cmd = [str(py), str(ROOT / "packaging" / "engine_builds.py"), backend, "--jobs",
           str(jobs), "--nice", str(nice), "--stage", str(ENGINES)]
    if _run(cmd) != 0:
        return f"the {backend} engine build failed (see its build.log above)"
    return None if manifest.exists() else f"the {backend} engine was not staged"


GPU_SKIP_ENV = "LOADOUT_GPU_TESTS_SKIP"  # tests/gpu report this reason when not run


def _gpu_test_engine(py: Path, env: dict[str, str]) -> None:
    """tests/gpu run on the Vulkan engine build (Mesa's lavapipe where there is no GPU):
    built once here where apt-get can install what it needs; elsewhere, and when the
    build fails, the reason goes to tests/gpu, which report it as their skip reason."""
    if (ENGINES / "vulkan" / "engine.json").exists():
        return
    if os.environ.get("LOADOUT_GPU_TESTS") == "0":
        why = "LOADOUT_GPU_TESTS=0"
    elif sys.platform == "linux" and shutil.which("apt-get"):
        why = extra_engine(py, "vulkan", nice=10)
    else:
        why = ("no Vulkan engine build in .venv/engines (python3 dev.py setup --engine "
               "vulkan builds it; it needs the Vulkan SDK)")
    if why:
        print(f"tests/gpu will not run: {why}", flush=True)
        env[GPU_SKIP_ENV] = why


def _setup_command(rest: list[str]) -> int:
    setup("dev")
    if rest[:1] == ["--engine"] and len(rest) == 2:
        why = extra_engine(_venv_python(), rest[1], nice=10)
        if why:
            print(f"the {rest[1]} engine could not be built here: {why}", flush=True)
            return 1
        print(f"the {rest[1]} engine is in {ENGINES / rest[1]}; run it with "
              f"LOADOUT_ENGINE={rest[1]}", flush=True)
    elif rest:
        print("usage: python3 dev.py setup [--engine vulkan]")
        return 2
    return 0


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("start", "test", "setup"):
        print(__doc__)
        return 2
    command, rest = sys.argv[1], sys.argv[2:]
    if command == "setup":
        return _setup_command(rest)
    return start(rest) if command == "start" else test(rest)


if __name__ == "__main__":
    sys.exit(main())
