"""The CLI's --workers: an unreachable worker is left out of the plan, said, not hung on."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.engine.test_rpc_worker import _free_port

ROOT = Path(__file__).resolve().parents[2]


def test_chat_with_an_unreachable_worker_plans_without_it_and_answers(tmp_path: Path) -> None:
    port = _free_port()  # nothing listens there
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "loadout", "chat", "demo", "--workers", f"127.0.0.1:{port}",
         "-p", "What is the capital of France?", "--max-tokens", "12", "--temperature", "0",
         "--threads", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
        env={**os.environ, "LOADOUT_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"workers left out of the plan: 127.0.0.1:{port}" in done.stderr
    assert done.stdout.strip()  # it answered
    assert time.monotonic() - started < 120
