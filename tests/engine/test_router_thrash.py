"""The router resists thrash and never loads for a malformed request.

Alternating two model names forced a reload per request (5-36 s each) with no limit, a
malformed request naming an unloaded model loaded it (evicting the loaded one), and the
model just loaded for a client with requests could be unloaded at once for another.
The rules (``engine.server.residency_guard``) on their own with a clock, then a real
router over real HTTP, and the router itself on real engines.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.server.errors import ApiError
from engine.server.residency_guard import ResidencyGuard
from tests.engine.server_fixtures import ServerProcess
from tests.engine.test_router import BUDGET_GIB, SMOL, _router_in_process, write_models


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _refusal(guard: ResidencyGuard, victims: list[tuple[str, float, bool]]) -> ApiError:
    with pytest.raises(ApiError) as info:
        guard.check("b", victims)
    assert info.value.status == 503
    return info.value


def test_a_model_with_work_stays_its_minimum_residency() -> None:
    clock = Clock()
    guard = ResidencyGuard(15.0, None, 60.0, clock)
    err = _refusal(guard, [("a", clock.now - 4, True)])
    assert err.code == "model_busy" and err.headers["Retry-After"] == "11"
    assert "'a'" in err.message and "15 s" in err.message
    guard.check("b", [("a", clock.now - 4, False)])  # no work: it may go
    guard.check("b", [("a", clock.now - 16, True)])  # its minimum is over


def test_swaps_past_the_rate_are_a_503_with_retry_after() -> None:
    clock = Clock()
    guard = ResidencyGuard(0.0, 2, 60.0, clock)
    guard.check("b", [("a", 0.0, False)])
    clock.now += 10
    guard.check("a", [("b", 0.0, False)])
    clock.now += 5
    err = _refusal(guard, [("a", 0.0, False)])
    assert err.code == "model_swap_limited" and err.headers["Retry-After"] == "45"
    guard.check("c", [])  # a load into free memory is never limited
    clock.now += 46
    guard.check("b", [("a", 0.0, False)])


def _post(srv: ServerProcess, body: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
    req = urllib.request.Request(srv.url + "/v1/chat/completions", method="POST",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            status, raw, headers = resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as err:
        status, raw, headers = err.code, err.read(), err.headers
    return status, json.loads(raw), {k.lower(): v for k, v in headers.items()}


def _states(srv: ServerProcess) -> dict[str, str]:
    return {m["id"]: m["state"] for m in srv.get_json("/v1/models")["data"]}


def _chat(model: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}],
            **extra}


@pytest.fixture(name="srv", scope="module")
def srv_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = write_models(tmp_path_factory.mktemp("thrash-models"))
    proc = ServerProcess("--models", str(folder), "--ram-budget", BUDGET_GIB, "--ctx", "512",
                         "--parallel", "1", "--threads", "1", "--models-max", "1",
                         "--max-swaps", "2", "--swap-window", "600",
                         home=tmp_path_factory.mktemp("thrash-home")).start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.mark.slow
@pytest.mark.parametrize("extra", [
    {"temperature": "hot"}, {"grammar": "root ::= [z-a]"}, {"stop": ["x"] * 100},
    {"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "string", "maxLength": 10 ** 6}}}},
    {"messages": [{"role": 5, "content": "x"}]},
], ids=["wrong-type", "empty-grammar", "too-many-stops", "schema-bomb", "bad-role"])
def test_a_malformed_request_for_an_unloaded_model_never_loads_it(
        srv: ServerProcess, extra: dict[str, Any]) -> None:
    assert _states(srv)["smol-c"] == "on_disk"
    status, doc, _ = _post(srv, _chat("smol-c", **extra))
    assert status == 400, doc
    assert _states(srv)["smol-c"] == "on_disk"
    assert "loaded smol-c" not in srv.stderr_path.read_text()


@pytest.mark.slow
def test_alternating_two_models_is_limited_with_a_clear_503(srv: ServerProcess) -> None:
    """With --models-max 1 and --max-swaps 2: two swaps, then 503 with Retry-After; the
    model loaded keeps answering its own requests."""
    codes = []
    for model in ("smol-a", "smol-b", "smol-a", "smol-b"):
        status, doc, headers = _post(srv, _chat(model))
        codes.append(status)
        if status == 503:
            assert doc["error"]["code"] == "model_swap_limited"
            assert int(headers["retry-after"]) > 0 and "retry in" in doc["error"]["message"]
    assert codes[:2] == [200, 200] and 503 in codes[2:]
    loaded = [m for m, s in _states(srv).items() if s == "loaded"]
    assert len(loaded) == 1
    assert _post(srv, _chat(loaded[0]))[0] == 200


@pytest.mark.slow
def test_a_model_just_loaded_with_a_request_in_flight_is_not_unloaded(
        tmp_path: Path) -> None:
    """The router on real engines: b was loaded for a request still in flight; c, which
    needs b's memory, gets 503 model_busy instead of unloading it."""
    import asyncio

    router = _router_in_process(write_models(tmp_path / "m"), pinned=frozenset({"smol-a"}),
                                min_residency_s=60.0)
    a, b, c = (router.models[m] for m in SMOL)

    async def scenario() -> None:
        await router.acquire(a)
        router.release(a)
        await router.acquire(b)  # in flight
        with pytest.raises(ApiError) as info:
            await router.acquire(c)
        assert info.value.status == 503 and info.value.code == "model_busy"
        assert int(info.value.headers["Retry-After"]) > 50
        assert (b.state, c.state) == ("loaded", "on_disk") and c.load_error is None
        router.release(b)

    try:
        asyncio.run(scenario())
    finally:
        router.stop()
