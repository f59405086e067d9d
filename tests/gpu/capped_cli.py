"""Run the ``loadout`` CLI with this process's address space capped: lavapipe's device
memory is this process's memory, so the cap is the device's real size while detection
still reports the full heap (a plan made too big on purpose, as on a GPU that holds less
than it reports).

    python tests/gpu/capped_cli.py MODEL ROOM_MIB loadout-arguments...

The cap is what the process maps once the engine and its Vulkan device are up, plus the
model file (mapped by the load) and ROOM_MIB for every buffer of the load.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

MIB = 1 << 20


def _vm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def main(argv: list[str]) -> int:
    model, room_mib, rest = argv[0], int(argv[1]), argv[2:]
    from engine import engine_select
    from engine.ggml_devices import engine_devices

    engine_select.activate_requested()
    engine_devices()  # the Vulkan instance and device exist before the cap
    import engine.native.model
    import engine.runtime  # noqa: F401
    from loadout.cli import main as cli_main

    limit = _vm_bytes() + Path(model).stat().st_size + room_mib * MIB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return cli_main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
