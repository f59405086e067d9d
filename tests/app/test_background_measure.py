"""The app's daily background pass: a figure this machine's detection took while busy is
measured again off the UI thread, a day later, and the window's machine gets the result;
the detection itself (what every start and command runs) never measures it again."""

from __future__ import annotations

import time
from typing import Any

import pytest

from engine.hardware import core_rate, detect, refine_due
from engine.hardware.cache import ProbeCache, fingerprint
from engine.paths import paths

pytestmark = pytest.mark.slow  # the real RAM and core probes run (a child process)

DAY = 24 * 3600


def test_a_busy_figure_a_day_old_is_measured_again_in_the_background(
        make_window: Any, qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import app.main

    monkeypatch.setattr(app.main, "REFINE_DELAY_MS", 0)
    here = detect(model_dirs=[], measure=False)
    key = fingerprint(here.host.cpu, here.host.threads, here.host.ram_total_bytes,
                      [(g.name, g.total_bytes) for g in here.gpus])
    old = time.time() - 2 * DAY
    # figures far below any real probe's, taken busy two days ago
    core = {**core_rate.cache_entry(core_rate.CoreRate(0.5, 0.25), busy=True),
            "measured_at": old}
    ProbeCache(key, host={"bandwidth_gbps": 0.5, "busy": True, "measured_at": old},
               cpu=core).save(paths().cache)
    started = detect(model_dirs=[])  # what the app's start runs: the cache, as it is
    assert started.host.bandwidth_gbps == 0.5 and started.host.core_prefill_gflops == 0.5
    assert refine_due(started)

    window = make_window()
    window._on_detected(started)
    assert window.state.local is started  # shown at once; the pass comes after
    qtbot.waitUntil(lambda: window.state.local is not started, timeout=180_000)
    refined = window.state.local.host
    assert refined.bandwidth_gbps > 0.5 and refined.core_prefill_gflops > 0.5
    assert not refine_due(window.state.local)  # not again before another day
    assert detect(model_dirs=[]).host.bandwidth_gbps == refined.bandwidth_gbps
