#!/usr/bin/env python3
"""Cross-compile the llama.cpp engine (llama-cpp-python) for 64-bit Windows on Linux.

    python3 packaging/windows_engine.py --jobs 2 --nice 10

Debian's mingw-w64 (``g++-mingw-w64-x86-64-posix``) builds the sdist's CMake project with
``windows/mingw-w64-x86_64.cmake`` as the toolchain file and ``windows/mingw_compat.h``
force-included into the C sources (mingw-w64 10 lacks ``THREAD_POWER_THROTTLING_STATE``).
The CPU recipe is the Linux one (``engine_builds.recipes()["cpu"]``: RPC, portable x86-64
baseline, no AVX-512 or AMX). The DLLs are packed with the sdist's Python package into a
``py3-none-win_amd64`` wheel, with the mingw runtime DLLs the engine imports
(libstdc++-6, libgcc_s_seh-1, libgomp-1, libwinpthread-1) beside them, so the bundle needs
nothing from a compiler. The wheel is cached like the Linux builds, in
``~/.cache/loadout-engine/cpu-win_amd64-<key>/`` with ``build.json`` and ``build.log``;
``key`` hashes the engine version, the CMake arguments, the toolchain file, the header
and the compiler's version.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import engine_builds  # noqa: E402  (the sibling script)

TOOLCHAIN = HERE / "windows" / "mingw-w64-x86_64.cmake"
COMPAT_HEADER = HERE / "windows" / "mingw_compat.h"
TRIPLET = "x86_64-w64-mingw32"
CC = f"{TRIPLET}-gcc-posix"
CXX = f"{TRIPLET}-g++-posix"
OBJDUMP = f"{TRIPLET}-objdump"
WHEEL_TAG = "py3-none-win_amd64"
# DLLs every Windows 10+ has (or that Windows' API sets resolve); anything else an engine
# DLL imports must be in the bundle.
SYSTEM_DLLS = frozenset({
    "advapi32.dll", "bcrypt.dll", "kernel32.dll", "msvcrt.dll", "ntdll.dll", "ole32.dll",
    "oleaut32.dll", "shell32.dll", "shlwapi.dll", "user32.dll", "ws2_32.dll",
    "wsock32.dll", "iphlpapi.dll", "dbghelp.dll", "psapi.dll", "version.dll",
    "winmm.dll", "gdi32.dll", "crypt32.dll", "secur32.dll", "userenv.dll",
})


def cmake_args(recipe: engine_builds.Recipe, platlib: Path) -> list[str]:
    """The CMake configure arguments of the cross build (after ``-S``/``-B``)."""
    return [
        f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_C_FLAGS=-include {COMPAT_HEADER}",
        f"-DSKBUILD_PLATLIB_DIR={platlib}",
        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_BUILD_TOOLS=OFF", "-DLLAMA_BUILD_SERVER=OFF",
        *recipe.cmake_args,
    ]


def compiler_version() -> str:
    """The first line of the cross compiler's ``--version`` (part of the cache key)."""
    try:
        out = subprocess.run([CXX, "--version"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise RuntimeError(f"{CXX} not found: install g++-mingw-w64-x86-64-posix") from exc
    return out.splitlines()[0]


def build_folder(recipe: engine_builds.Recipe, compiler: str) -> Path:
    """The cache folder of the cross build, keyed by everything that changes the DLLs."""
    text = "|".join((engine_builds.ENGINE, recipe.backend, *recipe.cmake_args, "win_amd64",
                     TOOLCHAIN.read_text(), COMPAT_HEADER.read_text(), compiler))
    key = hashlib.sha256(text.encode()).hexdigest()[:12]
    return engine_builds.cache_root() / f"{recipe.backend}-win_amd64-{key}"


def fetch_sdist(python: str, folder: Path) -> Path:
    """Download and unpack the engine's sdist into ``folder/src`` (once)."""
    source = folder / "src" / f"llama_cpp_python-{engine_builds.ENGINE_VERSION}"
    if (source / "CMakeLists.txt").is_file():
        return source
    download = folder / "src"
    download.mkdir(parents=True, exist_ok=True)
    archive = download / f"llama_cpp_python-{engine_builds.ENGINE_VERSION}.tar.gz"
    if not archive.exists():
        cmd = [python, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
               "-d", str(download), engine_builds.ENGINE]
        print("+", shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(download, filter="data")
    return source


def dll_imports(dll: Path) -> list[str]:
    """The DLL names ``dll`` imports (its PE import table, read with mingw's objdump)."""
    out = subprocess.run([OBJDUMP, "-p", str(dll)], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(r"^\s*DLL Name: (\S+)", out, re.M)


def mingw_runtime_dirs() -> list[Path]:
    """Where the cross compiler keeps its runtime DLLs (libstdc++, libgomp, winpthread)."""
    dirs = []
    for name in ("libstdc++-6.dll", "libwinpthread-1.dll"):
        found = subprocess.run([CXX, f"-print-file-name={name}"], capture_output=True,
                               text=True).stdout.strip()
        if found and Path(found).is_file():
            dirs.append(Path(found).resolve().parent)
    dirs += [Path(f"/usr/{TRIPLET}/lib")]
    return list(dict.fromkeys(dirs))


def bundle_runtime(lib: Path) -> list[str]:
    """Copy every non-system DLL the engine's DLLs import (transitively) into ``lib``.

    Raises:
        RuntimeError: a DLL is imported that is neither built, a mingw runtime DLL nor a
            Windows system DLL (the engine would not load on a clean Windows).
    """
    copied: list[str] = []
    pending = sorted(lib.glob("*.dll"))
    present = {p.name.lower() for p in pending}
    dirs = mingw_runtime_dirs()
    while pending:
        for name in dll_imports(pending.pop()):
            low = name.lower()
            if low in present or low in SYSTEM_DLLS or low.startswith("api-ms-win-"):
                continue
            found = next((d / name for d in dirs if (d / name).is_file()), None)
            if found is None:
                raise RuntimeError(f"{name} is imported by the engine but found neither in "
                                   f"the build nor in {', '.join(map(str, dirs))}")
            shutil.copy2(found, lib / name)
            present.add(low)
            copied.append(name)
            pending.append(lib / name)
    return sorted(copied)


def _record_line(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def make_wheel(source: Path, lib: Path, out_dir: Path) -> Path:
    """Pack the sdist's ``llama_cpp`` package and the built DLLs into a Windows wheel."""
    version = engine_builds.ENGINE_VERSION
    dist_info = f"llama_cpp_python-{version}.dist-info"
    files: dict[str, bytes] = {}
    package = source / "llama_cpp"
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(source).as_posix()
        if path.is_file() and "/lib/" not in f"/{rel}" and "__pycache__" not in rel:
            files[rel] = path.read_bytes()
    for dll in sorted(lib.glob("*.dll")):
        files[f"llama_cpp/lib/{dll.name}"] = dll.read_bytes()
    metadata = (source / "PKG-INFO").read_text(encoding="utf-8")
    files[f"{dist_info}/METADATA"] = metadata.encode()
    files[f"{dist_info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: loadout packaging/windows_engine.py\n"
        f"Root-Is-Purelib: false\nTag: {WHEEL_TAG}\n").encode()
    rows = [_record_line(name, data) for name, data in files.items()]
    rows.append([f"{dist_info}/RECORD", "", ""])
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    files[f"{dist_info}/RECORD"] = text.getvalue().encode()
    wheel = out_dir / f"llama_cpp_python-{version}-{WHEEL_TAG}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel


def _nice(cmd: list[str], nice: int) -> list[str]:
    return ["nice", "-n", str(nice), *cmd] if nice and shutil.which("nice") else cmd


def build(python: str, jobs: int, nice: int) -> Path:
    """Cross-build (or find in the cache) the Windows CPU engine wheel; return its path.

    Raises:
        RuntimeError: the compiler is missing, the build failed (see ``build.log``), or
            the engine imports a DLL that nothing provides.
    """
    recipe = engine_builds.recipes()["cpu"]
    compiler = compiler_version()
    folder = build_folder(recipe, compiler)
    wheels = sorted(folder.glob(f"llama_cpp_python-*-{WHEEL_TAG}.whl"))
    if wheels:
        return wheels[0]
    folder.mkdir(parents=True, exist_ok=True)
    source = fetch_sdist(python, folder)
    platlib = folder / "platlib"
    if platlib.exists():
        shutil.rmtree(platlib)
    configure = ["cmake", "-S", str(source), "-B", str(folder / "build"), "-G", "Ninja",
                 *cmake_args(recipe, platlib)]
    steps = [configure,
             _nice(["cmake", "--build", str(folder / "build"), "--parallel", str(jobs)],
                   nice),
             ["cmake", "--install", str(folder / "build")]]
    started = time.monotonic()
    code = 0
    with (folder / "build.log").open("w") as log:
        for cmd in steps:
            print("+", shlex.join(cmd), flush=True)
            log.write(f"+ {shlex.join(cmd)}\n")
            log.flush()
            code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
            if code:
                break
    wall_s = round(time.monotonic() - started, 1)
    record: dict[str, object] = {
        "engine": engine_builds.ENGINE, "backend": recipe.backend, "target": "win_amd64",
        "cmake_args": shlex.join(recipe.cmake_args), "compiler": compiler, "jobs": jobs,
        "commands": [shlex.join(c) for c in steps], "exit_code": code, "wall_s": wall_s,
        "patches": [], "platform": "win32", "machine": "AMD64"}
    lib = platlib / "llama_cpp" / "lib"
    if code == 0:
        record["runtime_dlls"] = bundle_runtime(lib)
        wheel = make_wheel(source, lib, folder)
    (folder / "build.json").write_text(json.dumps(record, indent=2) + "\n")
    if code != 0:
        raise RuntimeError(f"the Windows engine build failed (exit {code}, {wall_s} s); "
                           f"see {folder / 'build.log'}")
    print(f"built {wheel} in {wall_s} s", flush=True)
    return wheel


def main(argv: list[str] | None = None) -> int:
    """Command line: build (cached) and print the wheel's path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--nice", type=int, default=10)
    parser.add_argument("--python", default=sys.executable, help="Python that runs pip")
    args = parser.parse_args(argv)
    try:
        print(build(args.python, max(1, args.jobs), args.nice))
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
