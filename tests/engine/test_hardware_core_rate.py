"""One core's rates at detection: a failed, hung or lying probe and a hostile cache entry
leave the constants in place, never an exception (the real probe runs in
``test_hardware_host.py``)."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine.hardware import Sources, core_rate, detect
from engine.hardware.cache import FILE_NAME, ProbeCache, fingerprint
from planner.inventory import Inventory


def _key(tmp_path: Path) -> str:
    first = detect(model_dirs=[], measure=False, sources=Sources(cache_dir=tmp_path))
    return fingerprint(first.host.cpu, first.host.threads, first.host.ram_total_bytes,
                       [(g.name, g.total_bytes) for g in first.gpus])


def _unmeasured(inv: Inventory) -> bool:
    host = inv.host
    return host.core_prefill_gflops == 0.0 and host.core_decode_gbps == 0.0 and \
        "core_prefill_gflops" not in host.measured and "cpu_core_rate_default" in inv.notes


@pytest.mark.parametrize("entry", [
    "not a mapping",
    {"method": core_rate.METHOD, "prefill_gflops": "fast", "decode_gbps": 10.0},
    {"method": core_rate.METHOD, "prefill_gflops": -5.0, "decode_gbps": 10.0},
    {"method": core_rate.METHOD, "prefill_gflops": 1e300, "decode_gbps": 10.0},
    {"method": core_rate.METHOD, "prefill_gflops": True, "decode_gbps": 10.0},
    {"method": core_rate.METHOD, "prefill_gflops": 100.0},
    {"method": "an older probe", "prefill_gflops": 100.0, "decode_gbps": 10.0},
])
def test_a_hostile_cache_entry_is_not_believed(tmp_path: Path, entry: Any) -> None:
    key = _key(tmp_path)
    doc = {"schema": "loadout.probes/1", "fingerprint": key, "host": {}, "gpus": {},
           "disks": {}, "cpu": entry}
    (tmp_path / FILE_NAME).write_text(json.dumps(doc))
    inv = detect(model_dirs=[], measure=False, sources=Sources(cache_dir=tmp_path))
    assert _unmeasured(inv)
    # a measuring detection replaces it with what the probe says now
    calls: list[int] = []

    def probe(cancelled: Any) -> core_rate.CoreRate:
        calls.append(1)
        return core_rate.CoreRate(120.0, 14.0)

    again = detect(model_dirs=[], sources=Sources(cache_dir=tmp_path, core_probe=probe))
    assert calls == [1] and again.host.core_prefill_gflops == 120.0
    assert ProbeCache.load(tmp_path, key).cpu["decode_gbps"] == 14.0


def test_a_failed_probe_keeps_the_constants_and_is_not_retried_until_remeasured(
        tmp_path: Path) -> None:
    calls: list[int] = []

    def failing(cancelled: Any) -> None:
        calls.append(1)

    sources = Sources(cache_dir=tmp_path, core_probe=failing)
    assert _unmeasured(detect(model_dirs=[], sources=sources))
    assert _unmeasured(detect(model_dirs=[], sources=sources))
    assert calls == [1]
    detect(model_dirs=[], remeasure=True, sources=sources)
    assert calls == [1, 1]


def test_the_child_that_fails_hangs_or_lies_gives_no_figure() -> None:
    py = [sys.executable, "-c"]
    assert core_rate.measure_in_child(command=[*py, "import sys; sys.exit(3)"]) is None
    assert core_rate.measure_in_child(command=[*py, "print('hello')"]) is None
    lie = json.dumps({"schema": core_rate.SCHEMA, "method": core_rate.METHOD,
                      "prefill_gflops": float("inf"), "decode_gbps": 3.0})
    assert core_rate.measure_in_child(command=[*py, f"print({lie!r})"]) is None
    assert core_rate.measure_in_child(command=["/nonexistent/loadout"]) is None
    start = time.monotonic()
    assert core_rate.measure_in_child(
        timeout_s=0.5, command=[*py, "import time; time.sleep(30)"]) is None
    assert time.monotonic() - start < 10
    flag = threading.Event()
    flag.set()
    assert core_rate.measure_in_child(
        cancelled=flag.is_set, command=[*py, "import time; time.sleep(30)"]) is None
    good = json.dumps({"schema": core_rate.SCHEMA, "method": core_rate.METHOD,
                       "prefill_gflops": 99.5, "decode_gbps": 12.25})
    rate = core_rate.measure_in_child(command=[*py, f"print({good!r})"])
    assert rate is not None and (rate.prefill_gflops, rate.decode_gbps) == (99.5, 12.25)


def test_a_rate_measured_while_busy_is_kept_until_measured_again_then_the_best_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.hardware as hw

    answers = [core_rate.CoreRate(100.0, 20.0), core_rate.CoreRate(130.0, 15.0),
               core_rate.CoreRate(90.0, 10.0)]

    def probe(cancelled: Any) -> core_rate.CoreRate:
        return answers.pop(0)

    sources = Sources(cache_dir=tmp_path, core_probe=probe)
    monkeypatch.setattr(hw, "_busy", lambda threads: True)
    first = detect(model_dirs=[], sources=sources).host
    assert (first.core_prefill_gflops, first.core_decode_gbps) == (100.0, 20.0)
    assert ProbeCache.load(tmp_path, _key(tmp_path)).cpu["busy"] is True
    # taken while busy, yet kept: the next detections (busy or idle) do not measure it
    for busy in (True, False):
        monkeypatch.setattr(hw, "_busy", lambda threads, busy=busy: busy)
        again = detect(model_dirs=[], sources=sources).host
        assert (again.core_prefill_gflops, again.core_decode_gbps) == (100.0, 20.0)
    assert len(answers) == 2
    # measured again when asked, still busy: each figure's best kept
    monkeypatch.setattr(hw, "_busy", lambda threads: True)
    second = detect(model_dirs=[], remeasure=True, sources=sources).host
    assert (second.core_prefill_gflops, second.core_decode_gbps) == (130.0, 20.0)
    # measured on an idle machine: the clean figures replace the old ones
    monkeypatch.setattr(hw, "_busy", lambda threads: False)
    third = detect(model_dirs=[], refine=True, sources=sources).host
    assert (third.core_prefill_gflops, third.core_decode_gbps) == (90.0, 10.0)
    assert not answers and ProbeCache.load(tmp_path, _key(tmp_path)).cpu["busy"] is False


def test_a_probe_that_fails_when_measured_again_keeps_the_figure(tmp_path: Path) -> None:
    answers: list[core_rate.CoreRate | None] = [core_rate.CoreRate(100.0, 20.0), None]
    sources = Sources(cache_dir=tmp_path,
                      core_probe=lambda cancelled: answers.pop(0))
    detect(model_dirs=[], sources=sources)
    kept = detect(model_dirs=[], remeasure=True, sources=sources).host
    assert not answers and (kept.core_prefill_gflops, kept.core_decode_gbps) == (100.0, 20.0)


def test_a_child_that_writes_much_to_stderr_is_still_read() -> None:
    good = json.dumps({"schema": core_rate.SCHEMA, "method": core_rate.METHOD,
                       "prefill_gflops": 99.5, "decode_gbps": 12.25})
    chatty = f"import sys; sys.stderr.write('log line\\n' * 100000); print({good!r})"
    rate = core_rate.measure_in_child(timeout_s=20, command=[sys.executable, "-c", chatty])
    assert rate is not None and rate.prefill_gflops == 99.5
