#!/usr/bin/env python3
"""Build the llama.cpp engine (llama-cpp-python) once per backend, for bundles.

    python packaging/engine_builds.py --list
    python packaging/engine_builds.py cpu
    python packaging/engine_builds.py cuda --cuda-arch 89 --cuda-fill-toolkit --jobs 1 --nice 19
    python packaging/engine_builds.py cuda --stage build/engines --bundle-runtime

Each build is a wheel kept in ``~/.cache/loadout-engine/<backend>-<key>/`` (``key`` hashes
the engine version, backend, CMake arguments and platform, so a CUDA wheel is never taken
for a CPU one), together with ``build.json`` (the exact command, arguments and wall time)
and ``build.log``. ``--stage DIR`` unpacks the wheel's ``llama_cpp`` package into
``DIR/<backend>/`` with an ``engine.json`` manifest: the layout the bundle carries and
``engine.engine_select`` picks from at start-up.

Distributed builds are portable: ``GGML_NATIVE=OFF`` with an explicit x86-64 baseline
(AVX2, FMA, F16C, BMI2: every x86-64 CPU since 2013-2015). AMX is never compiled in: the
dev build targets this machine, a bundle targets everyone's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ENGINE_VERSION = "0.3.36"
ENGINE = f"llama-cpp-python=={ENGINE_VERSION}"
MANIFEST = "engine.json"
CACHE_ENV = "LOADOUT_ENGINE_CACHE"

# The x86-64 baseline of a distributed build (x86-64-v3 without AVX-512 or AMX).
X86_BASELINE: tuple[str, ...] = (
    "-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON",
    "-DGGML_F16C=ON", "-DGGML_BMI2=ON",
    "-DGGML_AVX512=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF",
)
# CUDA 13 compiles for Turing (7.5) and newer: T4/RTX 20, A100, RTX 30, RTX 40/L4,
# H100/H200, B200, RTX 50; plus PTX of the newest so a future GPU can JIT it.
CUDA_ARCHITECTURES = "75-real;80-real;86-real;89-real;90-real;100-real;120-real;120-virtual"
# ROCm: RDNA2 (RX 6000), RDNA3 (RX 7000), RDNA4 (RX 9000), CDNA2/3 (MI200, MI300).
HIP_TARGETS = "gfx1030;gfx1100;gfx1101;gfx1102;gfx1200;gfx1201;gfx90a;gfx942"


@dataclass(frozen=True)
class Recipe:
    """How to build one backend: CMake arguments, environment and what the builder needs.

    ``runtime_libs`` are shared-library name prefixes the engine links against that a
    bundle may carry beside it (``--bundle-runtime``); the GPU driver itself never ships.
    """

    backend: str
    cmake_args: tuple[str, ...]
    platforms: tuple[str, ...]
    needs: str
    env: tuple[tuple[str, str], ...] = ()
    runtime_libs: tuple[str, ...] = field(default=())


def _cpu_baseline() -> tuple[str, ...]:
    if platform.machine().lower() in ("x86_64", "amd64"):
        return X86_BASELINE
    return ("-DGGML_NATIVE=OFF",)


def recipes(cuda_arch: str = CUDA_ARCHITECTURES, hip_targets: str = HIP_TARGETS
            ) -> dict[str, Recipe]:
    """Every backend's recipe for this build machine's CPU architecture."""
    base = ("-DGGML_RPC=ON", *_cpu_baseline())
    return {
        "cpu": Recipe("cpu", base, ("linux", "win32", "darwin"), "a C/C++ compiler, CMake"),
        "cuda": Recipe(
            "cuda", (*base, "-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={cuda_arch}"),
            ("linux", "win32"), "the CUDA toolkit (nvcc, cudart, cuBLAS)",
            runtime_libs=("libcudart.so", "libcublas.so", "libcublasLt.so",
                          "cudart64_", "cublas64_", "cublasLt64_")),
        "hip": Recipe(
            "hip", (*base, "-DGGML_HIP=ON", f"-DGPU_TARGETS={hip_targets}"),
            ("linux", "win32"), "ROCm / HIP SDK (hipcc, hipBLAS, rocBLAS)",
            env=(("CC", "/opt/rocm/llvm/bin/clang"), ("CXX", "/opt/rocm/llvm/bin/clang++"),
                 ("HIPCXX", "/opt/rocm/llvm/bin/clang"))),
        "vulkan": Recipe("vulkan", (*base, "-DGGML_VULKAN=ON"), ("linux", "win32"),
                         "the Vulkan SDK (headers, loader, glslc)"),
        "metal": Recipe("metal", ("-DGGML_RPC=ON", "-DGGML_METAL=ON",
                                  "-DGGML_METAL_EMBED_LIBRARY=ON", "-DGGML_NATIVE=OFF"),
                        ("darwin",), "Xcode command line tools (macOS on Apple silicon)"),
    }


def cache_root() -> Path:
    """Where engine wheels are kept: ``$LOADOUT_ENGINE_CACHE`` or ``~/.cache/loadout-engine``."""
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "loadout-engine"))


def build_folder(recipe: Recipe, extra_args: tuple[str, ...] = ()) -> Path:
    """The cache folder of one build, keyed by everything that changes the binary."""
    text = "|".join((ENGINE, recipe.backend, *recipe.cmake_args, *extra_args,
                     sys.platform, platform.machine()))
    key = hashlib.sha256(text.encode()).hexdigest()[:12]
    return cache_root() / f"{recipe.backend}-{key}"


def cuda_toolkit_fill(python: str, cuda_home: Path = Path("/usr/local/cuda")) -> tuple[str, ...]:
    """CMake arguments that complete a minimal CUDA toolkit (nvcc without the libraries).

    cuBLAS comes from the ``nvidia-cublas`` wheel (headers and shared libraries). When the
    toolkit has no ``libcuda.so`` link stub (a build machine without the NVIDIA driver), one
    is generated from ``cuda.h``: a library named ``libcuda.so.1`` that exports every
    driver function, for the linker only; at run time the user's driver provides the real
    one. FindCUDAToolkit is pointed at both directly.
    """
    target = cache_root() / "toolchain"
    cublas = target / "cublas"
    lib = cublas / "nvidia" / "cu13" / "lib"
    if not (lib / "libcublas.so.13").exists():
        cmd = [python, "-m", "pip", "install", "-q", "--no-deps", "--target", str(cublas),
               "nvidia-cublas>=13,<14"]
        print("+", shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    include = cublas / "nvidia" / "cu13" / "include"
    args = [f"-DCUDA_cublas_LIBRARY={lib / 'libcublas.so.13'}",
            f"-DCUDA_cublasLt_LIBRARY={lib / 'libcublasLt.so.13'}",
            f"-DCMAKE_CUDA_FLAGS=-I{include}"]
    if not any((cuda_home / d / "libcuda.so").exists() for d in ("lib64/stubs", "lib64")):
        args.append(f"-DCUDA_cuda_driver_LIBRARY={_driver_stub(cuda_home, target)}")
    return tuple(args)


def _driver_stub(cuda_home: Path, target: Path) -> Path:
    stub = target / "driver-stub" / "libcuda.so"
    if stub.exists():
        return stub
    stub.parent.mkdir(parents=True, exist_ok=True)
    header = subprocess.run(["cc", "-E", "-P", str(cuda_home / "include" / "cuda.h")],
                            check=True, capture_output=True, text=True).stdout
    names = sorted(set(re.findall(r"CUresult\s+(cu\w+)\s*\(", header)))
    source = stub.with_suffix(".c")
    source.write_text("".join(f"int {n}(void) {{ return 999; }}\n" for n in names))
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(stub),
                    str(source)], check=True)
    print(f"generated the driver link stub {stub} ({len(names)} functions)", flush=True)
    return stub


# The block of ggml_vk_instance_init that sets validation-layer options needs
# VK_EXT_layer_settings (Vulkan headers 1.3.261 and newer); older headers (Debian 12 has
# 1.3.239) cannot compile it. The guard keeps it for new headers and creates the instance
# without those options for old ones.
VK_LAYER_SETTINGS_HEADER = 261
VK_SOURCE = "vendor/llama.cpp/ggml/src/ggml-vulkan/ggml-vulkan.cpp"
_VK_BLOCK = re.compile(
    r"(    VkBool32 enable_best_practice = layer_settings;\n.*?"
    r"    vk::InstanceCreateInfo instance_create_info\(vk::InstanceCreateFlags\{\}, "
    r"&app_info, layers, extensions, &layer_setting_info\);\n)", re.S)
_VK_GUARDED = (f"#if VK_HEADER_VERSION >= {VK_LAYER_SETTINGS_HEADER}\n\\1#else\n"
               "    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, "
               "&app_info, layers, extensions);\n#endif\n")
PATCHES_FILE = "patches.json"


def vulkan_header_version(include: Path = Path("/usr/include")) -> int | None:
    """``VK_HEADER_VERSION`` of the system's Vulkan headers, or ``None`` without them."""
    candidates = [include / "vulkan" / "vulkan_core.h"]
    sdk = os.environ.get("VULKAN_SDK")
    if sdk:
        candidates.insert(0, Path(sdk) / "include" / "vulkan" / "vulkan_core.h")
    for header in candidates:
        try:
            found = re.search(r"#define VK_HEADER_VERSION (\d+)", header.read_text())
        except OSError:
            continue
        if found:
            return int(found.group(1))
    return None


def patch_vulkan_layer_settings(source: Path) -> bool:
    """Guard the ``VK_EXT_layer_settings`` block of the sdist at ``source`` (see above).

    Returns whether the file was changed (``False`` when it is already guarded).

    Raises:
        RuntimeError: the block is not where this patch expects it (another llama.cpp).
    """
    path = source / VK_SOURCE
    text = path.read_text()
    if f"#if VK_HEADER_VERSION >= {VK_LAYER_SETTINGS_HEADER}" in text:
        return False
    patched, count = _VK_BLOCK.subn(_VK_GUARDED, text)
    if count != 1:
        raise RuntimeError(f"the VK_EXT_layer_settings block was not found in {path}")
    path.write_text(patched)
    return True


def source_patches(recipe: Recipe, header_version: int | None) -> tuple[str, ...]:
    """The patches ``recipe`` needs on this build machine (names, as the manifest lists)."""
    if (recipe.backend == "vulkan" and header_version is not None
            and header_version < VK_LAYER_SETTINGS_HEADER):
        return (f"vulkan-layer-settings-guard (headers 1.3.{header_version} < "
                f"1.3.{VK_LAYER_SETTINGS_HEADER})",)
    return ()


def prepare_source(recipe: Recipe, python: str, folder: Path) -> tuple[str, tuple[str, ...]]:
    """What pip builds: the package name, or a patched copy of the sdist when needed.

    The sdist is fetched once into ``folder/src`` with pip (the registry pip uses) and
    patched there; ``patches.json`` records what was changed.
    """
    patches = source_patches(recipe, vulkan_header_version())
    if not patches:
        return ENGINE, ()
    source = folder / "src" / f"llama_cpp_python-{ENGINE_VERSION}"
    if not (source / PATCHES_FILE).exists():
        download = folder / "src"
        download.mkdir(parents=True, exist_ok=True)
        archive = download / f"llama_cpp_python-{ENGINE_VERSION}.tar.gz"
        if not archive.exists():
            cmd = [python, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                   "-d", str(download), ENGINE]
            print("+", shlex.join(cmd), flush=True)
            subprocess.run(cmd, check=True)
        if source.exists():
            shutil.rmtree(source)
        with tarfile.open(archive) as tar:
            tar.extractall(download, filter="data")
        patch_vulkan_layer_settings(source)
        (source / PATCHES_FILE).write_text(json.dumps(list(patches)) + "\n")
    return str(source), patches


def build(recipe: Recipe, python: str, jobs: int, nice: int,
          extra_args: tuple[str, ...] = ()) -> Path:
    """Build (or find in the cache) the wheel of ``recipe`` and return its path.

    Raises:
        RuntimeError: the build failed or left no wheel (see ``build.log`` in its folder).
    """
    folder = build_folder(recipe, extra_args)
    wheels = sorted(folder.glob("llama_cpp_python-*.whl"))
    if wheels:
        return wheels[0]
    folder.mkdir(parents=True, exist_ok=True)
    target, patches = prepare_source(recipe, python, folder)
    cmake_args = shlex.join((*recipe.cmake_args, *extra_args))
    env = dict(os.environ, CMAKE_ARGS=cmake_args, CMAKE_BUILD_PARALLEL_LEVEL=str(jobs))
    if sys.platform == "linux":  # the recipes' compiler paths are those of Linux ROCm
        env.update(dict(recipe.env))
    # A build folder that outlives pip's temporary one: an interrupted build resumes where
    # it stopped (ninja rebuilds only what is missing), which matters for the hours a CUDA
    # build takes on a small machine.
    cmd = [python, "-m", "pip", "wheel", "--no-cache-dir", "--no-deps", "--no-binary",
           "llama-cpp-python", "-v", f"--config-settings=build-dir={folder / 'build'}",
           "-w", str(folder), target]
    if nice and shutil.which("nice"):
        cmd = ["nice", "-n", str(nice), *cmd]
    print(f"+ CMAKE_ARGS={shlex.quote(cmake_args)} CMAKE_BUILD_PARALLEL_LEVEL={jobs} "
          f"{shlex.join(cmd)}", flush=True)
    started = time.monotonic()
    with (folder / "build.log").open("w") as log:
        code = subprocess.call(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    wall_s = round(time.monotonic() - started, 1)
    record = {"engine": ENGINE, "backend": recipe.backend, "cmake_args": cmake_args,
              "jobs": jobs, "command": cmd, "exit_code": code, "wall_s": wall_s,
              "patches": list(patches), "platform": sys.platform,
              "machine": platform.machine()}
    (folder / "build.json").write_text(json.dumps(record, indent=2) + "\n")
    wheels = sorted(folder.glob("llama_cpp_python-*.whl"))
    if code != 0 or not wheels:
        raise RuntimeError(f"{recipe.backend} engine build failed (exit {code}, "
                           f"{wall_s} s); see {folder / 'build.log'}")
    print(f"built {wheels[0]} in {wall_s} s", flush=True)
    return wheels[0]


def stage(wheel: Path, recipe: Recipe, dest: Path, bundle_runtime: bool = False,
          cmake_args: str | None = None, target_platform: str = sys.platform) -> Path:
    """Unpack the wheel's ``llama_cpp`` package into ``dest/<backend>/`` with a manifest.

    With ``bundle_runtime`` the toolkit libraries the engine links against (CUDA runtime,
    cuBLAS) are copied beside it, so the user needs only the GPU driver. The manifest's
    ``cmake_args`` come from the build's ``build.json``, else ``cmake_args``, else the
    recipe. ``target_platform`` is the OS the build is for (``win32`` for one
    cross-compiled for Windows: its DLLs are kept as they are).
    """
    target = dest / recipe.backend
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as zf:
        members = [m for m in zf.namelist() if m.startswith("llama_cpp/")]
        zf.extractall(target, members)
    if target_platform != "win32":
        _restore_links(target / "llama_cpp" / "lib")
    if bundle_runtime and recipe.runtime_libs:
        _copy_runtime_libs(target / "llama_cpp" / "lib", recipe.runtime_libs)
    build_info = wheel.parent / "build.json"
    patches: list[str] = []
    if build_info.exists():
        info = json.loads(build_info.read_text())
        cmake_args = info["cmake_args"]
        patches = list(info.get("patches", []))
    elif cmake_args is None:
        cmake_args = shlex.join(recipe.cmake_args)
    manifest = {"schema": "loadout.engine/1", "backend": recipe.backend,
                "engine": ENGINE, "cmake_args": cmake_args, "patches": patches,
                "platform": target_platform, "machine": platform.machine()}
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return target


def _restore_links(lib: Path) -> None:
    # Wheels store symlinked sonames as copies; keep one real file per library and make
    # the sonames links again, so a bundle does not carry every library three times.
    if sys.platform == "win32" or not lib.is_dir():
        return
    files = sorted(p for p in lib.iterdir() if p.is_file() and not p.is_symlink())
    for path in files:
        stem = path.name.split(".so")[0]
        versions = sorted((p for p in files if p.name.startswith(stem + ".so")),
                          key=lambda p: len(p.name))
        real = versions[-1]
        if path is real or not path.exists() or path.stat().st_size != real.stat().st_size:
            continue
        path.unlink()
        path.symlink_to(real.name)


def _runtime_dirs() -> list[Path]:
    """Where toolkit libraries may be: the CUDA toolkit and the cuBLAS wheel's folder."""
    cuda = Path(os.environ.get("CUDA_PATH", "/usr/local/cuda"))
    dirs = [cuda / "bin", cuda / "lib64", *sorted(cuda.glob("targets/*/lib"))]
    return [*dirs, cache_root() / "toolchain" / "cublas" / "nvidia" / "cu13" / "lib"]


def _copy_runtime_libs(lib: Path, prefixes: tuple[str, ...]) -> list[str]:
    """Copy the toolkit libraries whose names start with ``prefixes`` beside the engine.

    Linux: what ``ldd`` resolves for the engine's libraries (or finds in the toolkit when
    ``ldd`` says "not found"). Windows: the matching DLLs of ``%CUDA_PATH%\\bin``.
    """
    copied: list[str] = []
    if sys.platform == "win32":
        for folder in _runtime_dirs():
            for dll in sorted(folder.glob("*.dll")):
                if dll.name.startswith(prefixes) and not (lib / dll.name).exists():
                    shutil.copy2(dll, lib / dll.name)
                    copied.append(dll.name)
        return copied
    if sys.platform != "linux":
        return copied
    pending = sorted(lib.glob("*.so*"))
    while pending:  # a copied library may need another one (cuBLAS needs cuBLASLt)
        out = subprocess.run(["ldd", str(pending.pop())], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            parts = line.split("=>")
            name = parts[0].strip()
            if len(parts) != 2 or not name.startswith(prefixes) or (lib / name).exists():
                continue
            found = Path(parts[1].split("(")[0].strip())
            if not found.is_file():
                found = next((d / name for d in _runtime_dirs() if (d / name).is_file()),
                             found)
            if found.is_file():
                shutil.copy2(found.resolve(), lib / name)
                copied.append(name)
                pending.append(lib / name)
    return copied


def main(argv: list[str] | None = None) -> int:
    """Command line of the engine builder (see the module docstring)."""
    parser = argparse.ArgumentParser(description="Build llama-cpp-python per backend.")
    parser.add_argument("backend", nargs="?", help="cpu, cuda, hip, vulkan or metal")
    parser.add_argument("--list", action="store_true", help="print every recipe and exit")
    parser.add_argument("--cuda-arch", default=CUDA_ARCHITECTURES,
                        help=f"CMAKE_CUDA_ARCHITECTURES (default {CUDA_ARCHITECTURES})")
    parser.add_argument("--hip-targets", default=HIP_TARGETS, help="AMD GPU targets")
    parser.add_argument("--cuda-fill-toolkit", action="store_true",
                        help="cuBLAS from the nvidia-cublas wheel and a generated driver "
                             "link stub, for a CUDA toolkit that lacks them")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="parallel compile jobs (CMAKE_BUILD_PARALLEL_LEVEL)")
    parser.add_argument("--nice", type=int, default=0, help="run the build under nice -n N")
    parser.add_argument("--python", default=sys.executable, help="Python that builds it")
    parser.add_argument("--stage", type=Path, help="unpack into DIR/<backend>/ for a bundle")
    parser.add_argument("--bundle-runtime", action="store_true",
                        help="with --stage: copy the toolkit runtime libraries beside it")
    args = parser.parse_args(argv)
    table = recipes(args.cuda_arch, args.hip_targets)
    if args.list or not args.backend:
        for each in table.values():
            print(f"{each.backend:7} {shlex.join(each.cmake_args)}\n"
                  f"        on {', '.join(each.platforms)}; needs {each.needs}")
        return 0
    if args.backend not in table:
        parser.error(f"unknown backend {args.backend!r}; one of {', '.join(table)}")
    recipe = table[args.backend]
    extra = cuda_toolkit_fill(args.python) if args.cuda_fill_toolkit else ()
    try:
        wheel = build(recipe, args.python, max(1, args.jobs), args.nice, extra)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(wheel)
    if args.stage:
        print(stage(wheel, recipe, args.stage, args.bundle_runtime))
    return 0


if __name__ == "__main__":
    sys.exit(main())
