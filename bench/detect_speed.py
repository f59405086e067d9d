"""How long ``loadout detect --json`` takes: cold (nothing cached, every probe runs) and
warm (probes cached), each as a fresh process, the way a user or the GUI starts it.

Run: ``.venv/bin/python bench/detect_speed.py [--runs N]``. Targets: warm < 1 s, cold < 5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed_detect(home: Path, *extra: str) -> tuple[float, dict[str, object]]:
    """Wall time of one ``loadout detect --json`` process and its document."""
    env = {**os.environ, "LOADOUT_HOME": str(home)}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "loadout", "detect", "--json", *extra],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="cold and warm runs each")
    args = parser.parse_args()
    cold: list[float] = []
    warm: list[float] = []
    doc: dict[str, object] = {}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="loadout-bench-") as tmp:
            seconds, doc = timed_detect(Path(tmp))
            cold.append(seconds)
            for _ in range(args.runs):
                warm.append(timed_detect(Path(tmp))[0])
    host = doc["host"]
    assert isinstance(host, dict)
    disks = doc["disks"]
    assert isinstance(disks, list)
    print(f"machine: {host['cpu']}, {host['threads']} threads, "
          f"{host['ram_total_bytes'] / 2**30:.1f} GiB RAM, {len(doc['gpus'])} GPU(s)")  # type: ignore[arg-type]
    print(f"measured: host RAM {host['bandwidth_gbps']} GB/s, "
          + ", ".join(f"disk {d['kind']} {d['read_gbps']} GB/s" for d in disks))
    print(f"notes: {' '.join(doc.get('notes', [])) or 'none'}")  # type: ignore[arg-type]
    for name, values, target in (("cold", cold, 5.0), ("warm", warm, 1.0)):
        verdict = "ok" if statistics.median(values) < target else "OVER TARGET"
        print(f"{name} detect --json: median {statistics.median(values):.2f} s, "
              f"best {min(values):.2f} s, worst {max(values):.2f} s over {len(values)} runs "
              f"(target < {target:.0f} s: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
