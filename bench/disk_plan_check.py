"""A model larger than the RAM, planned and dry-run: the plan's parts per device and
llama.cpp's verdict, at the usual host reserve and at one past the RAM.

A header-only, sparse llama-70B Q4_K file (``tests/helpers/gguf_factory.py``, ~40 GB
apparent, ~1 MB on disk) is planned on this machine as detected; each plan's devices are
printed (weights, KV, compute, other, reserve, capacity), with the sum of the weights
against the model's and the file's size. The plan at the usual reserve is then checked
with llama.cpp's no_alloc dry run (``engine/dry_run.py``): the host's figures on both
sides and the verdict.

    python bench/disk_plan_check.py [--reserve-gb 26.7]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _show(label: str, plan: object, weights: int, file_bytes: int) -> None:
    print(f"{label}: fits={plan.fits} reasons={[c.value for c in plan.reasons]}")  # type: ignore[attr-defined]
    for d in plan.devices:  # type: ignore[attr-defined]
        print(f"  {d.id:5s} weights={d.weights_bytes:>15,} kv={d.kv_bytes:>14,} "
              f"compute={d.compute_bytes:>13,} other={d.other_bytes:>11,} "
              f"reserve={d.reserve_bytes:>15,} capacity={d.capacity_bytes:>15,}")
    total = sum(d.weights_bytes for d in plan.devices)  # type: ignore[attr-defined]
    print(f"  weights summed {total:,} (model {weights:,}, file {file_bytes:,})")
    advice = [a.code.value for a in plan.advice if a.helps]  # type: ignore[attr-defined]
    print(f"  advice that helps: {advice}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reserve-gb", type=float, default=26.7,
                        help="the second plan's host reserve, in GB (default 26.7)")
    args = parser.parse_args()

    from engine import dry_run as dr
    from engine.gguf_file import load_profile
    from engine.hardware import detect
    from planner.plan import plan
    from planner.request import Request
    from tests.helpers.gguf_factory import write_sparse_70b

    path = write_sparse_70b(Path(tempfile.mkdtemp()) / "llama-70b-Q4_K.gguf")
    profile = load_profile(path)
    inventory = detect(measure=False)
    print(f"RAM available {inventory.host.ram_available_bytes:,}")
    usual = Request()
    first = plan(inventory, profile, usual)
    _show("usual reserve", first, profile.weights_bytes, profile.file_bytes)
    big = Request(host_reserve_bytes=int(args.reserve_gb * 1000**3))
    _show(f"reserve {args.reserve_gb} GB", plan(inventory, profile, big),
          profile.weights_bytes, profile.file_bytes)
    _, check = dr.confirm(str(path), inventory, usual, first)
    if check is None:
        print("dry run: not possible here")
        return
    for label, rows in (("dry run", check.devices), ("before correction", check.before)):
        for c in rows:
            print(f"{label}: {c.device} plan {c.predicted:,} llama.cpp {c.dry_run:,} "
                  f"({c.error_pct:+.1f}%)")
    print(f"verdict: {check.status}")


if __name__ == "__main__":
    main()
