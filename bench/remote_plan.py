"""How many bytes a remote plan reads, against the size of the file it plans.

Run from the repository root::

    .venv/bin/python bench/remote_plan.py

Serves header-only (sparse) GGUFs shaped like real models (Llama 3.1 8B and 70B with the
128,256-token vocabulary, a Qwen3-235B-A22B-shaped MoE with 151,936 tokens) from the local
hub server (``tests/helpers/hub_server.py``, the hub's HTTP protocol with ranged reads),
then for each: reads the profile through ``engine.hub.remote.read_remote`` (cold cache),
plans it on a 24 GB GPU rig, and reads it again (warm cache). Prints bytes fetched, share
of the file, requests and times ("header" is how far into the file the parser read; the
synthetic vocabularies have long tokens, so these headers are larger than real ones).
Goal: a remote plan reads < 5% of the file; exit code 1 if missed. Everything runs on
127.0.0.1; LOADOUT_HOME is a temporary folder.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_SHARE = 0.05
RIG = {"schema": "loadout.inventory/1",
       "gpus": [{"name": "RTX 4090", "vendor": "nvidia", "backend": "cuda",
                 "total_bytes": 24 << 30, "free_bytes": (24 << 30) - (600 << 20),
                 "bandwidth_gbps": 1008.0, "pcie_gbps": 25.0, "tflops_fp16": 165.0}],
       "host": {"cpu": "16-core desktop", "cores": 16, "threads": 32,
                "ram_total_bytes": 64 << 30, "ram_available_bytes": 56 << 30,
                "bandwidth_gbps": 80.0},
       "disks": [{"path": "/", "kind": "nvme", "read_gbps": 5.0}]}


def write_models(folder: Path) -> list[Path]:
    """Header-only files of three real model shapes (a few MB on disk each)."""
    from tests.helpers.gguf_factory import Shape, write_llama, write_qwen3moe

    llama8 = Shape(n_layers=32, n_embd=4096, n_head=32, n_head_kv=8, head_dim=128,
                   n_ff=14336, n_vocab=128256, n_ctx_train=131072, weight_type="Q4_K")
    llama70 = Shape(n_layers=80, n_embd=8192, n_head=64, n_head_kv=8, head_dim=128,
                    n_ff=28672, n_vocab=128256, n_ctx_train=131072, weight_type="Q4_K")
    moe235 = Shape(n_layers=94, n_embd=4096, n_head=64, n_head_kv=4, head_dim=128,
                   n_ff=12288, n_vocab=151936, n_ctx_train=262144, n_expert=128,
                   n_expert_used=8, n_ff_exp=1536, weight_type="Q4_K")
    return [write_llama(folder / "llama-3.1-8b-shape-Q4_K_M.gguf", llama8, header_only=True),
            write_llama(folder / "llama-3.1-70b-shape-Q4_K_M.gguf", llama70, header_only=True),
            write_qwen3moe(folder / "qwen3-235b-a22b-shape-Q4_K_M.gguf", moe235,
                           header_only=True)]


def main() -> int:
    """Print the table; return 1 if any remote plan reads 5% of its file or more."""
    with tempfile.TemporaryDirectory(prefix="loadout-remote-") as tmp:
        os.environ["LOADOUT_HOME"] = str(Path(tmp) / "home")
        from huggingface_hub import constants

        from engine.hub.remote import read_remote
        from planner.inventory import Inventory
        from planner.plan import plan
        from planner.request import Request
        from tests.helpers.hub_server import HubServer

        files = write_models(Path(tmp))
        inventory = Inventory.from_json(RIG)
        worst = 0.0
        with HubServer() as hub:
            os.environ["HF_ENDPOINT"] = hub.url
            os.environ["HF_HUB_OFFLINE"] = "0"
            constants.HF_HUB_OFFLINE = False
            print(f"{'model':<38} {'file':>9} {'header':>9} {'fetched':>10} {'share':>7} "
                  f"{'req':>4} {'cold':>7} {'warm':>7} {'warm bytes':>10}  plan")
            for path in files:
                hub.add_file("bench/Models-GGUF", path.name, path, sha256="0" * 64)
                spec = f"hf:bench/Models-GGUF/{path.name}"
                start = time.perf_counter()
                cold = read_remote(spec)
                cold_s = time.perf_counter() - start
                p = plan(inventory, cold.profile, Request(advise=False))
                start = time.perf_counter()
                warm = read_remote(spec)
                warm_s = time.perf_counter() - start
                share = cold.bytes_fetched / cold.file_bytes
                worst = max(worst, share)
                print(f"{path.name[:38]:<38} {cold.file_bytes / 1e9:7.1f}GB "
                      f"{cold.header_bytes / 1e6:7.2f}MB {cold.bytes_fetched / 1e6:8.2f}MB "
                      f"{share:7.3%} {cold.requests:>4} "
                      f"{cold_s * 1e3:5.0f}ms {warm_s * 1e3:5.0f}ms {warm.bytes_fetched:>10}  "
                      f"fits={p.fits} decode={p.predicted.decode_tps:.1f} t/s")
    verdict = "OK" if worst < GOAL_SHARE else "MISSED"
    print(f"largest share read: {worst:.3%} (goal < {GOAL_SHARE:.0%}): {verdict}")
    return 0 if worst < GOAL_SHARE else 1


if __name__ == "__main__":
    sys.exit(main())
