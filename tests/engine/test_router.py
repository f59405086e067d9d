"""``loadout serve --models DIR``: many models behind one server, over real HTTP with the
real ``openai`` client. Three synthetic llama GGUFs and the demo; a RAM budget that holds
two of the synthetic ones but not three (and never the demo)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from engine.demo import demo_model_path
from tests.engine.server_fixtures import ServerProcess, validate
from tests.helpers.gguf_factory import Shape, write_llama

pytestmark = pytest.mark.slow

SMOL = ("smol-a", "smol-b", "smol-c")
# each synthetic model plans ~16.5 MiB of RAM at 512 tokens x 2 slots: 41 MiB hold two
BUDGET_GIB = "0.04"
COMMON = ("--ram-budget", BUDGET_GIB, "--ctx", "512", "--parallel", "2", "--threads", "1")


def write_models(folder: Path) -> Path:
    """The three synthetic models and the demo (linked) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    shape = Shape(n_layers=4, n_embd=256, n_head=4, n_head_kv=2, head_dim=64, n_ff=512,
                  n_vocab=2048)
    for i, name in enumerate(SMOL):
        write_llama(folder / f"{name}.gguf", shape, seed=i)
    (folder / "demo-smollm.gguf").symlink_to(demo_model_path())
    return folder


@pytest.fixture(name="models_dir", scope="module")
def models_dir_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_models(tmp_path_factory.mktemp("router-models"))


@pytest.fixture(name="router", scope="module")
def router_fixture(models_dir: Path, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("router-home")
    proc = ServerProcess("--models", str(models_dir), *COMMON, "--keep", "smol-a",
                         home=home).start()
    try:
        yield proc
    finally:
        proc.stop()


def _client(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0,
                         timeout=120)


def _states(server: ServerProcess) -> dict[str, str]:
    return {m["id"]: m["state"] for m in server.get_json("/v1/models")["data"]}


def _wait_state(server: ServerProcess, model: str, state: str, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while _states(server)[model] != state:
        assert time.monotonic() < end, f"{model} never became {state}: {_states(server)}"
        time.sleep(0.1)


def _ask(client: openai.OpenAI, model: str, stream: bool = False) -> str:
    if stream:
        parts = list(client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=4,
            stream=True))
        assert parts[-1].choices[0].finish_reason in ("length", "stop")
        return str(parts[0].model)
    resp = client.chat.completions.create(model=model, max_tokens=4,
                                          messages=[{"role": "user", "content": "hi"}])
    assert resp.choices[0].finish_reason in ("length", "stop")
    return str(resp.model)


def _log(server: ServerProcess) -> str:
    return server.stderr_path.read_text(encoding="utf-8")


def test_models_lists_every_model_with_state_aliases_and_predicted_speed(
        router: ServerProcess) -> None:
    _wait_state(router, "smol-a", "loaded")  # pinned: loaded at start
    doc = _client(router).models.list().model_dump()
    validate(doc, "ListModelsResponse")
    by_id = {m["id"]: m for m in doc["data"]}
    assert set(by_id) == {*SMOL, "demo-smollm"}
    assert by_id["smol-a"]["pinned"] is True and by_id["smol-a"]["planned_bytes"]["host"] > 0
    assert "demo" in by_id["demo-smollm"]["aliases"]
    assert all(m["state"] in ("loaded", "loading", "on_disk") for m in by_id.values())
    end = time.monotonic() + 20
    while any(m["predicted_decode_tps"] is None for m in
              router.get_json("/v1/models")["data"]):
        assert time.monotonic() < end, "the predicted speeds never came"
        time.sleep(0.2)


def test_the_ready_line_names_the_kept_model_and_the_status_every_loaded_ones_slots(
        router: ServerProcess) -> None:
    assert router.ready["models"][0] != "smol-a" and router.model == "smol-a"  # --keep
    _wait_state(router, "smol-a", "loaded")
    engine = router.get_json("/v1/loadout/status")["engine"]
    loaded = {m for m, doc in engine["models"].items() if "engine" in doc}
    assert "smol-a" in loaded
    assert {s["model"] for s in engine["slots"]} == loaded
    assert len(engine["slots"]) == engine["slots_total"] == 2 * len(loaded)  # --parallel 2
    assert engine["devices"] and all(d["total_bytes"] > 0 for d in engine["devices"])
    assert engine["planned_bytes"]["host"] == sum(
        engine["models"][m]["planned_bytes"].get("host", 0) for m in loaded) > 0


def test_loads_on_demand_and_unloads_the_least_recently_used_never_the_pinned(
        router: ServerProcess) -> None:
    client = _client(router)
    assert _ask(client, "smol-b") == "smol-b"
    assert _ask(client, "smol-c") == "smol-c"  # a and b resident: b is unloaded, a kept
    states = _states(router)
    assert (states["smol-a"], states["smol-b"], states["smol-c"]) == \
        ("loaded", "on_disk", "loaded")
    assert _ask(client, "smol-b.gguf") == "smol-b"  # an alias; c is the LRU now
    assert _states(router)["smol-c"] == "on_disk"
    log = _log(router)
    assert re.search(r"unloaded smol-b to make room for smol-c: needs [\d.]+ MiB RAM, "
                     r"[\d.]+ MiB free", log), log
    assert "unloaded smol-c to make room for smol-b" in log
    assert "unloaded smol-a" not in log


def test_requests_for_models_being_swapped_in_all_succeed(router: ServerProcess) -> None:
    client = _client(router)
    jobs = [(SMOL[i % 3], i % 2 == 0) for i in range(12)]
    with ThreadPoolExecutor(len(jobs)) as pool:
        answered = list(pool.map(lambda job: _ask(client, *job), jobs))
    assert answered == [model for model, _ in jobs]
    assert _states(router)["smol-a"] == "loaded"


def _router_in_process(models_dir: Path, **options: Any) -> Any:
    """The router itself (no HTTP), on real engines, under the tests' RAM budget."""
    import dataclasses

    from engine.hardware import detect
    from engine.server.model_catalog import folder_models
    from engine.server.router import Router, RouterOptions
    from engine.server.router_plan import RouterPlanner
    from planner.request import Request

    request = Request(context=512, parallel=2, advise=False)
    inventory = detect(measure=False)
    budget = int(float(BUDGET_GIB) * 1024**3) + request.host_reserve_bytes
    inventory = dataclasses.replace(inventory, host=dataclasses.replace(
        inventory.host, ram_available_bytes=budget))
    catalog = [m for m in folder_models(models_dir) if m.id in SMOL]
    return Router(catalog, RouterPlanner(inventory, request, n_threads=1),
                  RouterOptions(**options))


def test_a_model_with_a_request_in_flight_is_unloaded_only_after_it_ends(
        models_dir: Path) -> None:
    """A lease is a request in flight."""
    import asyncio

    router = _router_in_process(models_dir, pinned=frozenset({"smol-a"}))
    a, b, c = (router.models[m] for m in SMOL)

    async def scenario() -> None:
        await router.acquire(a)
        router.release(a)
        await router.acquire(b)  # b has a request in flight
        swap_in = asyncio.create_task(router.acquire(c))
        await asyncio.sleep(0.5)
        assert not swap_in.done()
        assert (b.state, b.engine is not None) == ("unloading", True)
        router.release(b)  # its request ends: now b goes and c comes
        await asyncio.wait_for(swap_in, 60)
        assert (a.state, b.state, c.state) == ("loaded", "on_disk", "loaded")
        assert c.leases == 1

    try:
        asyncio.run(scenario())
    finally:
        router.stop()


def test_past_its_queue_a_request_for_a_loading_model_gets_503(models_dir: Path) -> None:
    import asyncio

    from engine.server.openai_schema import ApiError

    router = _router_in_process(models_dir, queue_size=1)
    b = router.models["smol-b"]

    async def scenario() -> None:
        first = asyncio.create_task(router.acquire(b))
        await asyncio.sleep(0)  # it waits for the load now: the queue (1) is full
        assert b.waiting == 1
        with pytest.raises(ApiError) as err:
            await router.acquire(b)
        assert err.value.status == 503 and err.value.headers == {"Retry-After": "1"}
        await asyncio.wait_for(first, 60)  # the one that waited is served
        assert b.state == "loaded" and b.leases == 1

    try:
        asyncio.run(scenario())
    finally:
        router.stop()


def test_a_model_the_budget_cannot_hold_is_refused_naming_the_memory(
        router: ServerProcess) -> None:
    with pytest.raises(openai.APIStatusError) as err:
        _ask(_client(router), "demo")
    assert err.value.status_code == 507
    message = str(err.value)
    assert re.search(r"needs [\d.]+ MiB RAM, [\d.]+ MiB free", message), message
    assert _states(router)["demo-smollm"] == "on_disk"
    assert "loaded demo-smollm" not in _log(router)  # the load was never started


def test_an_unknown_model_is_a_404_naming_the_models_served(router: ServerProcess) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        _ask(_client(router), "no-such-model")
    assert "smol-b" in str(err.value)


def test_a_request_that_will_not_wait_gets_503_with_retry_after(
        router: ServerProcess) -> None:
    client = _client(router)
    _ask(client, "smol-b")
    _ask(client, "smol-a")  # c is not resident now
    assert _states(router)["smol-c"] == "on_disk"
    with pytest.raises(openai.APIStatusError) as err:
        client.chat.completions.create(model="smol-c", max_tokens=2,
                                       messages=[{"role": "user", "content": "hi"}],
                                       extra_headers={"X-Loadout-Wait": "0"})
    assert err.value.status_code == 503
    assert err.value.response.headers.get("retry-after") == "1"
    _wait_state(router, "smol-c", "loaded")  # the refusal still started its load


def test_metrics_count_requests_tokens_loads_and_unloads_per_model(
        router: ServerProcess) -> None:
    for model in ("smol-b", "smol-c", "smol-b"):  # b goes to make room for c
        _ask(_client(router), model)
    text = router.get_text("/metrics")

    def value(family: str, **labels: str) -> float:
        inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
        m = re.search(rf"^{family}{{{re.escape(inner)}}} ([\d.e+]+)$", text, re.M)
        assert m, f"{family}{{{inner}}} missing"
        return float(m[1])

    assert value("loadout_model_requests_total", model="smol-b") >= 1
    assert value("loadout_model_generated_tokens_total", model="smol-b") >= 1
    assert value("loadout_model_loads_total", model="smol-b") >= 1
    assert value("loadout_model_unloads_total", model="smol-b", reason="room") >= 1
    assert value("loadout_model_loads_total", model="smol-a") == 1
    assert value("loadout_model_resident", model="smol-a") == 1


def test_models_max_caps_the_models_loaded_even_with_memory_free(
        models_dir: Path, tmp_path: Path) -> None:
    proc = ServerProcess("--models", str(models_dir), *COMMON, "--models-max", "1",
                         home=tmp_path).start()
    try:
        client = _client(proc)
        _ask(client, "smol-a")
        _ask(client, "smol-b")  # memory holds two, --models-max one
        assert _states(proc)["smol-a"] == "on_disk"
        assert "unloaded smol-a to make room for smol-b: --models-max 1" in _log(proc)
    finally:
        proc.stop()


def test_a_model_idle_for_the_timeout_is_unloaded(models_dir: Path, tmp_path: Path) -> None:
    proc = ServerProcess("--models", str(models_dir), *COMMON, "--idle-timeout", "2",
                         home=tmp_path).start()
    try:
        _ask(_client(proc), "smol-b")
        _wait_state(proc, "smol-b", "on_disk", timeout=20)
        assert re.search(r"unloaded smol-b \(idle \d+ s\)", _log(proc))
        assert 'loadout_model_unloads_total{model="smol-b",reason="idle"} 1' in \
            proc.get_text("/metrics")
    finally:
        proc.stop()


def test_the_load_bench_passes_a_short_run_that_forces_swaps() -> None:
    """``bench/router_load.py`` for 20 s: 12 clients over three models of which two fit."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    run = subprocess.run([sys.executable, str(root / "bench" / "router_load.py"),
                          "--duration", "20"], capture_output=True, text=True, timeout=300,
                         cwd=root)
    report = json.loads(run.stdout)
    assert run.returncode == 0, report
    assert report["failed"] == 0 and report["out_of_memory"] == 0
    assert report["unloads"] >= 3 and not report["unexplained_unloads"]
    assert report["peak_resident_models"] == 2
    assert report["peak_planned_mib"] <= report["budget_mib"]


def test_library_serves_the_demo_and_the_users_models(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    write_llama(home / "models" / "mine.gguf", Shape(n_vocab=2048))
    empty = {"HOME": str(tmp_path), "USERPROFILE": str(tmp_path),
             "HF_HUB_CACHE": str(tmp_path / "hf"), "OLLAMA_MODELS": str(tmp_path / "ollama")}
    proc = ServerProcess("--library", *COMMON[2:], home=home, env=empty).start()
    try:
        by_id = {m["id"]: m for m in proc.get_json("/v1/models")["data"]}
        assert "mine" in by_id and len(by_id) == 2
        demo = next(i for i, m in by_id.items() if "demo" in m["aliases"])
        assert _ask(_client(proc), "demo") == demo
    finally:
        proc.stop()


def test_library_serves_the_model_folders_added_to_it(tmp_path: Path) -> None:
    home, added = tmp_path / "home", tmp_path / "added models"
    (home / "models").mkdir(parents=True)
    (added / "sub").mkdir(parents=True)
    write_llama(added / "sub" / "extra.gguf", Shape(n_vocab=2048))
    empty = {"HOME": str(tmp_path), "USERPROFILE": str(tmp_path),
             "HF_HUB_CACHE": str(tmp_path / "hf"), "OLLAMA_MODELS": str(tmp_path / "ollama")}
    proc = ServerProcess("--library", "--models-dir", str(added), "--models-dir",
                         str(tmp_path / "gone"), *COMMON[2:], home=home, env=empty).start()
    try:
        ids = {m["id"] for m in proc.get_json("/v1/models")["data"]}
        assert "extra" in ids and len(ids) == 2  # the demo and the added folder's model
        assert _ask(_client(proc), "extra") == "extra"
    finally:
        proc.stop()


@pytest.mark.parametrize(("args", "said"), [
    (("--models", "{empty}"), "no GGUF model found"),
    (("--models-dir", "{models}"), "--models-dir applies to --library"),
    (("--models", "{empty}/nowhere"), "not a folder"),
    (("--models", "{models}", "--keep", "nope"), "--keep nope: not among the models"),
    (("demo", "--models", "{models}"), "give MODEL or --models/--library, not both"),
    (("--models", "{models}", "--no-plan"), "--no-plan apply to one model"),
    (("--models", "{models}", "--mmproj", "x.gguf"), "--mmproj apply to one model"),
    (("--models", "{models}", "--model-kv-type", "smol-a=q5_1"), "must be one of f16"),
    (("--models", "{models}", "--model-ngl", "nope=3"), "nope is not among the models"),
    (("demo", "--model-ngl", "demo=3"), "apply to --models/--library"),
])
def test_a_folder_without_models_or_an_unknown_keep_is_a_clear_error(
        args: tuple[str, ...], said: str, models_dir: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    argv = [a.format(empty=tmp_path, models=models_dir) for a in args]
    run = subprocess.run([sys.executable, "-m", "loadout", "serve", *argv, "--port", "0"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "LOADOUT_HOME": str(tmp_path)})
    assert run.returncode in (1, 2)
    assert said in run.stderr and "Traceback" not in run.stderr
