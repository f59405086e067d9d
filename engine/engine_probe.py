"""Does a GPU engine build really see a GPU here? Asked in a separate process, remembered.

A GPU build whose driver library loads can still see no device: a driver too old for the
build's CUDA version, a GPU architecture the build was not compiled for, a broken ROCm.
llama.cpp then quietly runs on the CPU. So before a GPU build is chosen for good, a child
process activates it, lists the devices its ggml sees and reports the number of GPUs; the
answer is kept in the config folder per build and driver, and asked again when either
changes.

    python -m engine.engine_probe ENGINE_FOLDER      # prints {"gpus": N, "backends": [...]}

``backends`` are those ggml registered (``CUDA`` is there on a machine without an NVIDIA
GPU too, when the build's libraries load): what a release check of a GPU build can see on
a runner without that GPU.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from engine.engine_select import (
    ACTIVE_ENV,
    ENGINE_ENV,
    MANIFEST,
    REASON_ENV,
    EngineBuild,
    Machine,
    activate,
    loadout_command,
)
from engine.paths import paths

log = logging.getLogger(__name__)

PROBE_FILE = "engine-probe.json"
PROBE_ARG = "--engine-probe"  # the frozen launcher's hidden option


def probe_command(build: EngineBuild) -> list[str]:
    """The command that probes ``build`` in a fresh process (frozen bundle or not)."""
    if getattr(sys, "frozen", False):  # the console executable: its stdout is the answer
        return [*loadout_command(), PROBE_ARG, str(build.folder)]
    return [sys.executable, "-m", "engine.engine_probe", str(build.folder)]


def run_probe(build: EngineBuild, timeout: float = 120.0) -> int:
    """GPUs that ``build`` sees, from a child process; 0 when the probe fails or hangs."""
    env = {k: v for k, v in os.environ.items()
           if k not in (ENGINE_ENV, ACTIVE_ENV, REASON_ENV, "LLAMA_CPP_LIB_PATH",
                        "MTMD_CPP_LIB")}
    try:
        proc = subprocess.run(probe_command(build), env=env, capture_output=True, text=True,
                              timeout=timeout)
        lines = proc.stdout.strip().splitlines()
        gpus = int(json.loads(lines[-1])["gpus"]) if proc.returncode == 0 and lines else 0
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, TypeError) as exc:
        log.warning("probing the %s engine failed: %s", build.backend, exc)
        return 0
    if proc.returncode != 0:
        log.warning("probing the %s engine failed (exit %s): %s", build.backend,
                    proc.returncode, proc.stderr.strip()[-500:])
    return gpus


def _key(build: EngineBuild, machine: Machine) -> str:
    manifest = build.folder / MANIFEST
    stamp = manifest.stat().st_mtime_ns if manifest.exists() else 0
    return "|".join((str(build.folder), build.engine, str(stamp),
                     ",".join(sorted(machine.runtimes)), ",".join(map(str, machine.vendors))))


def sees_gpu(build: EngineBuild, machine: Machine,
             probe: Callable[[EngineBuild], int] | None = None) -> bool:
    """Whether ``build`` sees at least one GPU on ``machine``, probing once and caching.

    ``probe`` (``EngineBuild -> int``) defaults to :func:`run_probe`.
    """
    path = paths().config / PROBE_FILE
    try:
        cache = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache = {}
    key = _key(build, machine)
    if not isinstance(cache, dict) or not isinstance(cache.get(key), int):
        cache = cache if isinstance(cache, dict) else {}
        count = (probe or run_probe)(build)
        cache[key] = int(count)
        paths().ensure()
        path.write_text(json.dumps(cache, indent=1) + "\n", encoding="utf-8")
    gpus = int(cache[key])
    log.info("the %s engine sees %d GPU(s)", build.backend, gpus)
    return gpus > 0


def gpu_count() -> int:
    """GPUs (discrete or integrated) the ``llama_cpp`` of this process sees."""
    from engine.ggml_devices import engine_devices

    return sum(1 for dev in engine_devices() if dev.kind in ("gpu", "igpu"))


def main(argv: list[str]) -> int:
    """Activate the build in ``argv[0]`` and print ``{"gpus": N, "backends": [...]}``."""
    from engine.ggml_devices import engine_backends

    folder = Path(argv[0])
    activate(EngineBuild(backend=folder.name, folder=folder))
    print(json.dumps({"gpus": gpu_count(), "backends": engine_backends()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
