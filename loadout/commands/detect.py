"""``loadout detect [--json]``: the Inventory of this machine (a valid rig file with --json)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

GIB = 2**30


def register(sub: Any) -> None:
    p = sub.add_parser("detect", help="the GPUs, host and disks of this machine",
                       description="Detect GPUs, host and model disks. --json prints the "
                                   "Inventory, which is also a rig file for --rig.")
    p.add_argument("--json", action="store_true", help="print the Inventory as JSON")
    p.add_argument("--remeasure", action="store_true",
                   help="measure bandwidths again instead of using the cached figures")
    p.add_argument("--no-measure", action="store_true",
                   help="measure nothing new; figures not cached yet are nominal")
    p.add_argument("--models", action="append", type=Path, metavar="DIR",
                   help="a folder models are read from (repeatable; default: Loadout's)")


def run(args: argparse.Namespace) -> int:
    from engine.hardware import detect

    inventory = detect(model_dirs=args.models, measure=not args.no_measure,
                       remeasure=args.remeasure)
    if args.json:
        json.dump(inventory.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(describe(inventory.to_json()))
    return 0


# What the most common reason codes mean, for the text output (the JSON keeps the codes).
EXPLAIN = {
    "nvml_unavailable": "an NVIDIA card is present but its driver library (NVML) is not",
    "nvml_not_installed": "the nvidia-ml-py package is missing",
    "nvidia_driver_not_loaded": "the NVIDIA kernel driver is not loaded",
    "nvml_version_mismatch": "the NVIDIA driver was updated: reboot to load the new one",
    "nvml_no_permission": "no permission to query the NVIDIA driver",
    "gpu_lost": "a GPU fell off the bus (check power and the PCIe slot)",
    "amdgpu_driver_not_loaded": "an AMD card is present but the amdgpu driver is not loaded",
    "engine_has_no_gpu_backend": "the engine was built for the CPU only: rebuild it with "
                                 "CMAKE_ARGS for your GPU (see README)",
    "not_seen_by_engine": "the engine cannot use this GPU (hidden by *_VISIBLE_DEVICES, or "
                          "an engine built without its backend)",
    "zero_free_reported": "the driver reports no free memory on this GPU",
    "host_busy_while_measuring": "the CPUs were busy while RAM bandwidth was measured: "
                                 "run 'loadout detect --remeasure' when the machine is idle",
    "page_cache_suspected": "the read came from RAM, not the disk: a typical figure is used",
    "gpu_probe_unavailable": "GPU bandwidth is the driver's peak: install loadout[probe] "
                             "(torch) to measure it",
}


def _explained(codes: list[str]) -> list[str]:
    lines = []
    for code in dict.fromkeys(c.split(":")[0] for c in codes):
        if code in EXPLAIN:
            lines.append(f"  - {code}: {EXPLAIN[code]}")
    return lines


def _gib(n: int) -> str:
    return f"{n / GIB:.1f} GiB"


def _source(figure: str, measured: list[str], notes: list[str]) -> str:
    if figure in measured:
        return "measured"
    if "bandwidth_driver_peak" in notes and figure == "bandwidth_gbps":
        return "driver peak"
    return "nominal"


def describe(doc: dict[str, Any]) -> str:
    """Readable text of an Inventory JSON document."""
    h = doc["host"]
    host_bw = "measured" if "bandwidth_gbps" in h["measured"] else "not measured: typical"
    lines = [
        f"Host: {h['cpu']}, {h['cores']} cores / {h['threads']} threads, "
        f"{h['numa_nodes']} NUMA node(s)",
        f"  RAM {_gib(h['ram_total_bytes'])} total, {_gib(h['ram_available_bytes'])} available,"
        f" {h['bandwidth_gbps']:.1f} GB/s "
        f"({host_bw})",
        f"  ISA: {' '.join(h['isa']) or 'none reported'}",
    ]
    if not doc["gpus"]:
        lines.append("GPUs: none")
    for g in doc["gpus"]:
        where = f"{g['backend']}" + (f", {g['engine_device']}" if g.get("engine_device") else "")
        extras = [f"{g['bandwidth_gbps']:.0f} GB/s "
                  f"({_source('bandwidth_gbps', g['measured'], g['notes'])})"]
        if not g["unified_memory"]:
            extras.append(f"link {g['pcie_gbps']:.1f} GB/s")
        if g["tflops_fp16"]:
            extras.append(f"{g['tflops_fp16']:.0f} TFLOPS FP16")
        if g["drives_display"]:
            extras.append("drives a display")
        if g["unified_memory"]:
            extras.append("unified memory")
        if g.get("other_process_bytes"):
            extras.append(f"other processes hold {_gib(g['other_process_bytes'])}")
        lines.append(f"GPU {g['index']}: {g['name']} ({where}): {_gib(g['free_bytes'])} free "
                     f"of {_gib(g['total_bytes'])}, " + ", ".join(extras))
        if g["notes"]:
            lines.append(f"  notes: {' '.join(g['notes'])}")
    for d in doc["disks"]:
        device = f" ({d['device']})" if d.get("device") else ""
        how = "measured" if d["measured"] else "nominal"
        lines.append(f"Disk {d['path']}: {d['kind']}{device}, read {d['read_gbps']:.2f} GB/s "
                     f"({how})" + (f"; notes: {' '.join(d['notes'])}" if d.get("notes") else ""))
    if doc.get("notes"):
        lines.append(f"Notes: {' '.join(doc['notes'])}")
    every = [*doc.get("notes", []), *(n for g in doc["gpus"] for n in g["notes"]),
             *(n for d in doc["disks"] for n in d.get("notes", []))]
    lines.extend(_explained(every))
    return "\n".join(lines) + "\n"
