#!/usr/bin/env python3
"""Check an installed engine build that cannot run on this runner (no GPU for it).

    python .github/scripts/check_engine.py LOADOUT_EXECUTABLE ENGINE_FOLDER [BACKEND]

Runs the installed executable's hidden ``--engine-probe ENGINE_FOLDER`` (the child that
the app itself starts to ask a build how many GPUs it sees): the build's libraries load,
and ggml lists its backends. With ``BACKEND`` (``CUDA``, ``ROCm``, ``Vulkan``) that
backend must be among them. Prints the probe's answer; exits non-zero when the build
did not load or the backend is missing.
"""

from __future__ import annotations

import json
import subprocess
import sys


def main(argv: list[str]) -> int:
    executable, folder = argv[0], argv[1]
    wanted = argv[2] if len(argv) > 2 else None
    proc = subprocess.run([executable, "--engine-probe", folder], capture_output=True,
                          text=True, timeout=300)
    print(proc.stderr[-4000:], file=sys.stderr)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        print(f"the engine in {folder} did not load (exit {proc.returncode})")
        return 1
    answer = json.loads(lines[-1])
    print(f"{folder}: {json.dumps(answer)}")
    if wanted and wanted not in answer.get("backends", []):
        print(f"the {wanted} backend is not registered by {folder}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
