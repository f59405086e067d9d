"""Build llama.cpp's own ``llama-bench`` and ``llama-server`` from the engine's source.

The reference numbers of ``bench/engine_overhead.py`` come from llama.cpp's own tools
built from the same source (the llama-cpp-python 0.3.36 sdist) with the same flags as
the engine wheel: CPU, ``-DGGML_RPC=ON``, AMX kernels off (they crash on VMs that
advertise AMX without enabling it). The build lives in a cache folder outside the
repository (``LOADOUT_BENCH_CACHE``, default ``~/.cache/loadout-bench``); only the needed
targets are built. ``LOADOUT_ENGINE_SDIST=/path/to/sdist.tar.gz`` skips the download.

    python bench/llama_tools.py            # build (once) and print the binaries' paths
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

log = logging.getLogger(__name__)

ENGINE_VERSION = "0.3.36"
SDIST = f"llama_cpp_python-{ENGINE_VERSION}"
TARGETS = ("llama-bench", "llama-server")
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"


def cache_dir() -> Path:
    """Where the source and builds are kept (never inside the repository)."""
    env = os.environ.get("LOADOUT_BENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "loadout-bench"


def cmake_flags() -> list[str]:
    """The same configuration as the engine wheel (see dev.py), for a CPU build."""
    # shared libraries, as the engine wheel has them: a static build's position-dependent
    # code is a few percent faster, which is the build's difference, not the engine's
    flags = ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_RPC=ON", "-DBUILD_SHARED_LIBS=ON",
             "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
             "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_CURL=OFF",
             "-DLLAMA_OPENSSL=OFF"]
    if sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64"):
        flags += [f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}"]
    return flags


def llama_cpp_source() -> Path:
    """The vendored llama.cpp of the sdist: unpacked in the cache, downloaded if needed."""
    root = cache_dir()
    src = root / SDIST / "vendor" / "llama.cpp"
    if (src / "CMakeLists.txt").is_file():
        return src
    root.mkdir(parents=True, exist_ok=True)
    tarball = root / f"{SDIST}.tar.gz"
    local = os.environ.get("LOADOUT_ENGINE_SDIST")  # an sdist already on disk
    if not tarball.is_file() and local and Path(local).is_file():
        shutil.copyfile(local, tarball)
    if not tarball.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                        "--no-binary", ":all:", f"llama-cpp-python=={ENGINE_VERSION}",
                        "-d", str(root)], check=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(root, filter="data")
    return src


def build(targets: tuple[str, ...] = TARGETS) -> dict[str, Path]:
    """Configure (once) and build ``targets``; returns each binary's path."""
    src = llama_cpp_source()
    flags = cmake_flags()
    key = hashlib.sha256("|".join([ENGINE_VERSION, *flags]).encode()).hexdigest()[:12]
    out = cache_dir() / f"build-{key}"
    if not (out / "build.ninja").is_file():
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.run(["cmake", "-S", str(src), "-B", str(out), *generator, *flags],
                       check=True)
    jobs = str(os.cpu_count() or 2)
    subprocess.run(["cmake", "--build", str(out), "-j", jobs, "--target", *targets],
                   check=True)
    return {t: out / "bin" / t for t in targets}


def main() -> int:
    logging.basicConfig(level=logging.INFO)
    for name, path in build().items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
