#!/usr/bin/env python3
"""A stand-in for the NVIDIA driver's library, for release checks on runners without a GPU.

    python .github/scripts/cuda_driver_stub.py CUDA_INCLUDE OUT_DIR

Writes ``OUT_DIR/nvcuda.dll`` (Windows, MSVC's ``cl``) or ``OUT_DIR/libcuda.so.1``
(``cc``): every ``CUresult`` function of ``cuda.h`` (the names after its macros, as
libraries link them), each returning 999 (``CUDA_ERROR_UNKNOWN``). With it on the library
path, a CUDA engine build loads and ggml registers its CUDA backend, which finds no
device. It is never shipped: users have the real driver.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def driver_functions(preprocessed: str) -> list[str]:
    """The driver API's function names in preprocessed ``cuda.h`` text."""
    found = re.findall(r"CUresult\s+(?:__stdcall\s+)?(cu\w+)\s*\(", preprocessed)
    return sorted(set(found))


def main(argv: list[str]) -> int:
    include, out = Path(argv[0]), Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    header = include / "cuda.h"
    windows = sys.platform == "win32"
    preprocess = (["cl", "/nologo", "/EP", f"/I{include}", str(header)] if windows
                  else ["cc", "-E", "-P", f"-I{include}", str(header)])
    text = subprocess.run(preprocess, check=True, capture_output=True, text=True).stdout
    names = driver_functions(text)
    if not names:
        print(f"no driver functions found in {header}", file=sys.stderr)
        return 1
    export = "__declspec(dllexport) " if windows else ""
    source = out / "cuda_driver_stub.c"
    source.write_text("".join(f"{export}int {n}(void) {{ return 999; }}\n" for n in names))
    if windows:
        target = out / "nvcuda.dll"
        cmd = ["cl", "/nologo", "/LD", str(source), f"/Fe:{target}", f"/Fo:{out}\\"]
    else:
        target = out / "libcuda.so.1"
        cmd = ["cc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(target),
               str(source)]
    subprocess.run(cmd, check=True, cwd=out)
    print(f"{target}: {len(names)} driver functions, each returning 999")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
