"""``loadout recommend``: ranked (model, quantization) choices for this machine or a rig.

Each line: fit badge, predicted decode speed and TTFT, quality tier and its warnings,
download size. ``--json`` prints exactly one ``loadout.recommend/1`` document.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TASKS = ("chat", "code", "agent", "math", "creative")
BADGES = {"all_on_gpu": "all on GPU", "experts_in_ram": "experts in RAM",
          "partly_in_ram": "partly in RAM", "in_ram": "in RAM (CPU)",
          "streams_from_disk": "streams from disk", "does_not_fit": "does not fit"}


def register(sub: Any) -> None:
    p = sub.add_parser("recommend", help="ranked model and quantization choices for this "
                                         "machine (or a rig file)")
    p.add_argument("--rig", default=None, help="recommend for the hardware in this rig file")
    p.add_argument("--task", choices=TASKS, default="chat")
    p.add_argument("--all-quants", action="store_true",
                   help="list every quantization, not only the best one per model")
    p.add_argument("--limit", type=int, default=None, help="at most N choices")
    p.add_argument("--catalog", default=None, help="another catalog file (loadout.catalog/1)")
    p.add_argument("--offline", action="store_true",
                   help="use cached hub listings and headers only")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _inventory(rig: str | None) -> Any:
    from engine.rig_file import inventory_for

    return inventory_for(rig)


def _size(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def run(args: argparse.Namespace) -> int:
    from engine.hub.catalog import load_catalog
    from engine.hub.recommend import recommend

    inventory = _inventory(args.rig)
    catalog = load_catalog(refresh=not args.offline,
                           path=Path(args.catalog) if args.catalog else None)
    print(f"catalog: {catalog.status}", file=sys.stderr)
    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            end = "\n" if done == total else ""
            print(f"\rjudging models {done}/{total}", end=end, file=sys.stderr, flush=True)

    result = recommend(inventory, task=args.task, catalog=catalog, all_quants=args.all_quants,
                       limit=args.limit, progress=progress)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
        return 0
    if not result.items:
        if result.skipped and all(r == "not listed" for _, r in result.skipped):
            print(f"no model could be judged: the hub's listings were never fetched and "
                  f"the hub cannot be reached now ({catalog.status}); connect once, then "
                  "recommendations also work offline", file=sys.stderr)
        else:
            print("no model could be judged: " + ("; ".join(f"{m}: {r}" for m, r in
                                                           result.skipped)
                                                  or "the catalog is empty"), file=sys.stderr)
        return 1
    from loadout import words

    print(f"{'#':>2}  {'model':<40} {'quant':<11} {'fit':<18} {'decode':>9} {'TTFT':>7} "
          f"{'quality':<13} {'download':>9}")
    with words.user_language():
        for i, r in enumerate(result.items, 1):
            print(f"{i:>2}  {r.name[:40]:<40} {r.quant:<11} {BADGES[r.fit.value]:<18} "
                  f"{r.decode_tps:>5.1f} t/s {r.ttft_s:>6.2f}s {r.quality_tier:<13} "
                  f"{_size(r.download_bytes):>9}")
            for code in r.warnings:  # the sentence the wizard shows, not the code
                print(f"      ! {words.recommendation_warning(code)}")
    for model_id, reason in result.skipped:
        print(f"    skipped {model_id}: {reason}", file=sys.stderr)
    print("decode = predicted decode t/s; TTFT for a 1024-token prompt. "
          "Download with: loadout pull REPO:QUANT", file=sys.stderr)
    return 0
