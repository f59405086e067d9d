"""A worker that goes away mid-answer: the engine process ends and the reason is clear."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.rpc import WorkerError, worker_lost
from tests.engine.test_rpc_worker import _free_port, _wait_listening

ROOT = Path(__file__).resolve().parents[2]

_MAIN = """
import sys
sys.path.insert(0, "bench")
from cluster import generate
from engine.demo import demo_model_path
eps = sys.argv[1].split(",")
engine = {"rpc_workers": eps, "devices": ["RPC0", "RPC1"], "n_gpu_layers": 31,
          "split_mode": 1, "main_gpu": 0, "tensor_split": [16.0, 15.0]}
def tick(n):
    if n == 3:
        print("decoding", flush=True)
        sys.stdin.readline()  # the test kills a worker, then lets decoding go on
generate(str(demo_model_path()), engine, 400, 1, tick)
print("finished", flush=True)
"""


def test_killing_a_worker_mid_answer_ends_with_a_clear_error(tmp_path: Path) -> None:
    ports = [_free_port(), _free_port()]
    workers = [subprocess.Popen([sys.executable, "-m", "loadout", "worker", "--port", str(p),
                                 "--threads", "1"], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True) for p in ports]
    endpoints = [f"127.0.0.1:{p}" for p in ports]
    try:
        for port, proc in zip(ports, workers, strict=True):
            _wait_listening(port, proc)
        log = tmp_path / "engine.log"  # the engine logs a lot: a file, not a pipe
        with log.open("w") as log_file:
            main = subprocess.Popen([sys.executable, "-c", _MAIN, ",".join(endpoints)],
                                    cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=log_file, text=True)
        assert main.stdout is not None and main.stdin is not None
        assert main.stdout.readline().strip() == "decoding"
        workers[1].kill()
        workers[1].wait(timeout=10)
        main.stdin.write("\n")
        main.stdin.flush()
        out, _ = main.communicate(timeout=60)
        assert main.returncode != 0 and "finished" not in out
        tail = log.read_text(errors="replace")[-20000:]
        # the process said itself, before ending, which worker went and what to do
        said = [line for line in tail.splitlines() if line.startswith("loadout: ")]
        assert said and endpoints[1] in said[-1] and endpoints[0] not in said[-1], tail[-1500:]
        assert "Plan again without it" in said[-1]
        error = worker_lost(tail, endpoints)
        assert isinstance(error, WorkerError) and isinstance(error, ConnectionError)
        assert "went away" in str(error) and "Plan again without it" in str(error)
    finally:
        for w in workers:
            w.kill()
            w.wait(timeout=10)


def test_an_ordinary_failure_is_not_called_a_lost_worker() -> None:
    assert worker_lost("llama_model_load: error loading model", ["127.0.0.1:1"]) is None
