"""How a decode step hands its chunks over, and the step sums the status reports."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.launch import LaunchSpec
from engine.metrics import RequestTimer, StepStats
from engine.requests import Chunk, GenerationRequest, RequestHandle, SamplingParams, push_all
from engine.runtime import Engine


def _chunk(text: str, finish: str | None = None) -> Chunk:
    return Chunk(text, (1,), finish, RequestTimer().snapshot())


def test_push_all_delivers_every_chunk_with_one_wake_up_per_event_loop() -> None:
    handles = [RequestHandle(GenerationRequest(prompt="x")) for _ in range(3)]
    wakes: list[int] = []

    async def main() -> list[list[str]]:
        loop = asyncio.get_running_loop()
        call_soon_threadsafe = loop.call_soon_threadsafe

        def counted(*args: Any, **kwargs: Any) -> Any:
            wakes.append(1)
            return call_soon_threadsafe(*args, **kwargs)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]

        async def read(handle: RequestHandle) -> list[str]:
            return [c.text async for c in handle]

        readers = [asyncio.ensure_future(read(h)) for h in handles]
        await asyncio.sleep(0.05)  # every reader waits on its handle now
        pusher = threading.Thread(target=lambda: push_all(
            [(h, _chunk(f"{i}a")) for i, h in enumerate(handles)]
            + [(h, _chunk(f"{i}b", "stop")) for i, h in enumerate(handles)]))
        pusher.start()
        pusher.join()
        return await asyncio.wait_for(asyncio.gather(*readers), 10)

    got = asyncio.run(main())
    assert got == [["0a", "0b"], ["1a", "1b"], ["2a", "2b"]]
    assert len(wakes) == 1
    assert all(h.done for h in handles)


def test_push_all_ignores_what_follows_a_final_chunk() -> None:
    handle = RequestHandle(GenerationRequest(prompt="x"))
    push_all([(handle, _chunk("a", "stop")), (handle, _chunk("late"))])
    final = handle.result(1)
    assert (final.text, final.finish_reason) == ("a", "stop")


def test_step_stats_sum_the_steps_and_admissions() -> None:
    stats = StepStats()
    before = stats.to_json()
    stats.step(0.030, 0.025, 9, 8)
    stats.step(0.020, 0.019, 8, 8, between_s=0.001)
    stats.admit(0.004)
    after = stats.to_json()
    assert after["steps"] - before["steps"] == 2
    assert after["step_s"] == pytest.approx(0.050)
    assert after["decode_s"] == pytest.approx(0.044)
    assert (after["batch_tokens"], after["generating_slots"]) == (17, 16)
    assert (after["admitted"], after["queue_s"]) == (1, pytest.approx(0.004))
    assert after["between_s"] == pytest.approx(0.001)


@pytest.fixture(scope="module")
def engine(demo_model: Path) -> Iterator[Engine]:
    eng = Engine(LaunchSpec(str(demo_model), n_threads=1, n_ctx=1024, n_seq_max=2))
    yield eng
    eng.close()


@pytest.mark.slow
def test_the_status_step_sums_match_what_the_requests_decoded(engine: Engine) -> None:
    recorded: list[str] = []
    engine._scheduler.on_finish = lambda metrics, reason: recorded.append(reason)
    before = engine.status()["steps"]
    params = SamplingParams(temperature=0.0, max_tokens=8, ignore_eos=True)
    handles = [engine.submit(GenerationRequest(prompt=p, params=params))
               for p in ("1, 2, 3, 4,", "The sky is")]
    finals = [h.result(60) for h in handles]
    after = engine.status()["steps"]
    d = {k: after[k] - before[k] for k in after}
    assert [f.finish_reason for f in finals] == ["length", "length"]
    assert sorted(recorded) == ["length", "length"]  # each run recorded once, after its end
    assert d["admitted"] == 2
    generated = sum(f.metrics.generated_tokens for f in finals)
    assert d["generating_slots"] == generated == 16  # one token per slot sampled per step
    new_prompt = sum(f.metrics.prompt_tokens - f.metrics.cached_tokens for f in finals)
    assert d["batch_tokens"] == new_prompt + generated - len(finals)  # the last is not fed
    assert d["steps"] >= 8
    assert 0 < d["decode_s"] <= d["step_s"]
    assert d["queue_s"] >= 0
    assert 0 < d["between_s"] < d["step_s"]  # the gaps of consecutive steps, not idle time


@pytest.mark.slow
def test_requests_sent_together_share_their_first_step(
        demo_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.runtime as runtime

    # the gap a burst may have, widened so that a busy test machine cannot split this one
    monkeypatch.setattr(runtime, "_BURST_GAP_S", 0.2)
    monkeypatch.setattr(runtime, "_BURST_MAX_S", 1.0)
    params = SamplingParams(temperature=0.0, max_tokens=1)
    with Engine(LaunchSpec(str(demo_model), n_threads=1, n_ctx=1024, n_seq_max=3)) as eng:
        before = eng.status()["steps"]
        handles = [eng.submit(GenerationRequest(prompt=f"Count to {n}:", params=params))
                   for n in (3, 4, 5)]
        assert all(h.result(60).finish_reason == "length" for h in handles)
        after = eng.status()["steps"]
    assert after["admitted"] - before["admitted"] == 3
    assert after["steps"] - before["steps"] == 1  # one prefill for the three prompts
