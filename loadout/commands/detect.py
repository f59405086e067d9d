"""``loadout detect [--json]``: the Inventory of this machine (a valid rig file with --json)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

GIB = 2**30


def register(sub: Any) -> None:
    """Add the ``detect`` command and its options to the CLI's subparsers."""
    p = sub.add_parser("detect", help="the GPUs, host and disks of this machine",
                       description="Detect GPUs, host and model disks. --json prints the "
                                   "Inventory, which is also a rig file for --rig.")
    p.add_argument("--json", action="store_true", help="print the Inventory as JSON")
    p.add_argument("--remeasure", action="store_true",
                   help="measure every figure again now (figures once measured are "
                        "kept, even those taken while the machine was busy: run this when "
                        "it is idle; while busy, the best figure seen is kept)")
    p.add_argument("--no-measure", action="store_true",
                   help="measure nothing new; figures not cached yet are nominal")
    p.add_argument("--workers", default=None, metavar="HOST:PORT,...",
                   help="also list the devices of these RPC workers ('loadout worker')")
    p.add_argument("--link-gbps", type=float, default=None,
                   help="network bandwidth to the workers in GB/s (default: measured)")
    p.add_argument("--models", action="append", type=Path, metavar="DIR",
                   help="a folder models are read from (repeatable; default: Loadout's)")


def run(args: argparse.Namespace) -> int:
    """Detect this machine and print its Inventory (JSON or text); exit status 0."""
    from engine.hardware import detect

    inventory = detect(model_dirs=args.models, measure=not args.no_measure,
                       remeasure=args.remeasure)
    if args.workers:
        from engine.hardware.workers import add_workers

        endpoints = [w.strip() for w in args.workers.split(",") if w.strip()]
        inventory = add_workers(inventory, endpoints, link_gbps=args.link_gbps)
    if args.json:
        json.dump(inventory.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(describe(inventory.to_json()))
    return 0


# Codes whose sentence the text output adds (the JSON keeps only the codes).
_WORTH_EXPLAINING = (
    "nvml_unavailable", "nvml_not_installed", "nvidia_driver_not_loaded",
    "nvml_version_mismatch", "nvml_no_permission", "gpu_lost", "amdgpu_driver_not_loaded",
    "engine_has_no_gpu_backend", "not_seen_by_engine", "zero_free_reported",
    "host_busy_while_measuring", "page_cache_suspected", "gpu_probe_unavailable",
    "gpu_disappeared", "folder_missing",
)


def _explained(codes: list[str]) -> list[str]:
    from engine.hardware.codes import explain

    wanted = dict.fromkeys(c.split(":")[0] for c in codes)
    return [f"  - {code}: {explain(code)}" for code in wanted if code in _WORTH_EXPLAINING]


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
        if g.get("endpoint"):
            how = "measured" if "link_gbps" in g["measured"] else "nominal"
            extras.append(f"network link to {g['endpoint']} {g['link_gbps']:.3f} GB/s "
                          f"({how}), {g['link_latency_s'] * 1e3:.2f} ms round trip")
        elif not g["unified_memory"]:
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
