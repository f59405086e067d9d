"""``loadout pull REPO[:QUANT]``: download a model from the hub, resumable, verified.

Shows what will be downloaded (files, size, destination, free space) first, then a
progress bar on stderr. Ctrl-C pauses: run the same command again to resume, also after
a restart; ``--discard`` removes the partial files. The model's path goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("pull", help="download a model from the hub (resumable, verified)")
    p.add_argument("spec", nargs="?", default=None,
                   help="OWNER/REPO[:QUANT] (e.g. unsloth/Qwen3-8B-GGUF:Q4_K_M) or "
                        "hf:OWNER/REPO/FILE.gguf")
    p.add_argument("--pending", action="store_true",
                   help="list paused or interrupted downloads (resume with the same spec)")
    p.add_argument("--to", choices=("models", "hub-cache"), default="models",
                   help="Loadout's model folder (default) or the shared Hugging Face cache")
    p.add_argument("--discard", action="store_true",
                   help="cancel for good: remove the partial files of this download")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds to wait for the hub per network operation")
    p.add_argument("--allow-unverified", action="store_true",
                   help="download a file even when the hub gives no sha256 to check it by "
                        "(a corrupt or substituted file would go unnoticed; refused "
                        "without this)")
    p.add_argument("--json", action="store_true", help="print one JSON document at the end")


class _Bar:
    """A one-line progress bar on stderr (redrawn at most 5 times a second)."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, p: Any) -> None:
        now = time.monotonic()
        done = p.done_bytes >= p.total_bytes
        if now - self.last < 0.2 and not done:
            return
        self.last = now
        share = p.done_bytes / p.total_bytes if p.total_bytes else 1.0
        bar = "#" * int(share * 30)
        left = (p.total_bytes - p.done_bytes) / p.bytes_per_s if p.bytes_per_s > 0 else 0
        sys.stderr.write(f"\r[{bar:<30}] {share:6.1%} {p.done_bytes / 1e9:6.2f}/"
                         f"{p.total_bytes / 1e9:.2f} GB {p.bytes_per_s / 1e6:6.1f} MB/s "
                         f"{left:5.0f}s left  file {p.file_index + 1}/{p.file_count}")
        if done:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _pending(as_json: bool) -> int:
    from engine.hub.downloads import pending_downloads

    found = pending_downloads()
    if as_json:
        print(json.dumps({"schema": "loadout.pending/1", "downloads": [
            {"spec": f"hf:{d.repo}/{d.path}", "have_bytes": d.have_bytes, "size": d.size,
             "partial": str(d.partial), "target": str(d.target)} for d in found]}))
        return 0
    for d in found:
        print(f"hf:{d.repo}/{d.path}  {d.have_bytes / 1e9:.2f}/{d.size / 1e9:.2f} GB")
    if not found:
        print("no paused downloads", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    from engine.hub.downloads import Destination, Status, discard, download, plan_download
    from engine.hub.errors import UnverifiedFileError

    if args.pending:
        return _pending(args.json)
    if args.spec is None:
        print("loadout pull: error: give OWNER/REPO[:QUANT] (or --pending)", file=sys.stderr)
        return 2
    plan = plan_download(args.spec, Destination(args.to), timeout=args.timeout)
    if args.discard:
        freed = discard(plan)
        print(f"removed {freed / 1e9:.2f} GB of partial files", file=sys.stderr)
        return 0
    print(f"{plan.repo}: {len(plan.items)} file(s), {plan.total_bytes / 1e9:.2f} GB "
          f"({plan.remaining_bytes / 1e9:.2f} GB to download) -> "
          f"{plan.items[0].target.parent}; {plan.free_bytes / 1e9:.1f} GB free", file=sys.stderr)
    try:
        result = download(plan, progress=None if args.json else _Bar(), timeout=args.timeout,
                          allow_unverified=args.allow_unverified)
    except KeyboardInterrupt:
        print("\npaused: run the same command to resume", file=sys.stderr)
        return 130
    except UnverifiedFileError as exc:
        print(f"loadout pull: error: {exc} (--allow-unverified)", file=sys.stderr)
        return 1
    for path in result.unverified:
        print(f"warning: {path.name}: the hub gave no sha256 for this file, so it is "
              "unverified (its hash is recorded, but nothing says it is the right file)",
              file=sys.stderr)
    if args.json:
        print(json.dumps({"schema": "loadout.pull/1", "status": result.status.value,
                          "model_path": str(result.model_path),
                          "files": [str(f) for f in result.files],
                          "unverified": [str(f) for f in result.unverified],
                          "bytes_downloaded": result.bytes_downloaded}))
    elif result.status is Status.COMPLETE:
        print(result.model_path)
    return 0 if result.status is Status.COMPLETE else 130
