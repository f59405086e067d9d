"""``loadout worker``: serve this machine's GPUs (or CPU) to other Loadouts over RPC."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "worker", help="serve this machine's devices to another Loadout (llama.cpp RPC)",
        description="Serve this machine's GPUs (or its CPU) as devices of another Loadout, "
                    "through llama.cpp's RPC backend. The protocol is unauthenticated and "
                    "unencrypted: use it on a trusted LAN only.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=50052)
    p.add_argument("--devices", default="",
                   help="comma-separated engine device names (default: every GPU, else CPU)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (default: all)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a non-loopback --host (anyone on that network can use it)")
    p.add_argument("--cache", action="store_true",
                   help="keep a local cache of received tensors in the user cache folder")
    p.add_argument("--cache-max-gb", type=float, default=20.0, metavar="GB",
                   help="the most the tensor cache may hold; the least recently used "
                        "tensors go first (default 20)")


def run(args: argparse.Namespace) -> int:
    from engine.paths import paths
    from engine.rpc import RemoteBindRefused, is_loopback, serve_worker

    if not is_loopback(args.host) and not args.allow_remote:
        raise RemoteBindRefused(
            f"refusing to listen on {args.host}: the RPC protocol has no authentication, so "
            "anyone who can reach this port can use your devices; add --allow-remote to "
            "serve a trusted LAN")
    devices = [d.strip() for d in args.devices.split(",") if d.strip()] or None
    cache_dir = str(paths().ensure().cache / "rpc") if args.cache else None
    print(f"loadout worker: serving on {args.host}:{args.port}. The RPC protocol is not "
          "authenticated: anyone who can reach this port can use these devices.",
          file=sys.stderr, flush=True)
    serve_worker(args.host, args.port, devices, args.threads or None, cache_dir,
                 allow_remote=args.allow_remote,
                 cache_max_bytes=max(0, int(args.cache_max_gb * (1 << 30))))
    return 0
