"""Hostile requests to ``loadout serve`` over real HTTP: each answer must be a clear 4xx or
5xx in the API's error shape, must not leak the server's folders, and must not cost the
models or requests of other clients."""

from __future__ import annotations

import base64
import io
import json
import os
import struct
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.engine.server_fixtures import ServerProcess, server_fixture  # noqa: F401
from tests.helpers.gguf_factory import Shape, write_llama
from tests.helpers.gguf_mmproj import png_bytes, write_vision_pair

pytestmark = pytest.mark.slow

# each synthetic model plans ~16.5 MiB of RAM at 512 tokens x 2 slots: 41 MiB hold two
ROUTER_ARGS = ("--ram-budget", "0.04", "--ctx", "512", "--parallel", "2", "--threads", "1")


def _post(server: ServerProcess, path: str, doc: Any, headers: dict[str, str] | None = None
          ) -> tuple[int, Any]:
    req = urllib.request.Request(server.url + path, data=json.dumps(doc).encode(),
                                 method="POST", headers={"Content-Type": "application/json",
                                                         **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _chat(server: ServerProcess, model: str, content: Any = "hi", wait: bool = True
          ) -> tuple[int, Any]:
    return _post(server, "/v1/chat/completions", {
        "model": model, "max_tokens": 2, "messages": [{"role": "user", "content": content}]},
        None if wait else {"X-Loadout-Wait": "0"})


# ---------------------------------------------------------------- router

@pytest.fixture(name="router")
def router_fixture(tmp_path: Path) -> Iterator[tuple[ServerProcess, Path]]:
    folder = tmp_path / "models"
    folder.mkdir()
    shape = Shape(n_layers=4, n_embd=256, n_head=4, n_head_kv=2, head_dim=64, n_ff=512,
                  n_vocab=2048)
    for i, name in enumerate(("good-a", "good-b", "broken", "swapped")):
        write_llama(folder / f"{name}.gguf", shape, seed=i)
    proc = ServerProcess("--models", str(folder), *ROUTER_ARGS, home=tmp_path).start()
    try:
        yield proc, folder
    finally:
        proc.stop()


def _states(server: ServerProcess) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for m in server.get_json("/v1/models")["data"]}


def test_requests_for_a_model_broken_after_start_do_not_evict_the_healthy_ones(
        router: tuple[ServerProcess, Path]) -> None:
    server, folder = router
    broken = folder / "broken.gguf"
    time.sleep(1.0)  # the start plans every model (the broken one while it was whole)
    broken.write_bytes(broken.read_bytes()[:broken.stat().st_size // 2])
    assert _chat(server, "good-a")[0] == 200
    assert _chat(server, "good-b")[0] == 200
    status, doc = _chat(server, "broken")
    assert status == 500 and doc["error"]["code"] == "model_load_failed"
    # the first failed load may have made room; both healthy models come back
    assert _chat(server, "good-a")[0] == 200
    assert _chat(server, "good-b")[0] == 200
    for _ in range(3):  # a client that insists on the broken model
        status, doc = _chat(server, "broken")
        assert status == 500 and doc["error"]["code"] == "model_load_failed"
    # a client that will not wait is told it failed, not to retry a load that never comes
    status, doc = _chat(server, "broken", wait=False)
    assert status == 500 and doc["error"]["code"] == "model_load_failed"
    models = _states(server)
    assert models["good-a"]["state"] == "loaded" and models["good-b"]["state"] == "loaded"
    # the reason is shown without the server's folders (the log has them)
    error = models["broken"]["load_error"]
    assert "broken" in error and str(folder) not in error
    # a deleted file is refused before anything is unloaded
    broken.unlink()
    status, doc = _chat(server, "broken")
    assert status == 500 and "missing" in doc["error"]["message"]
    assert {k: m["state"] for k, m in _states(server).items()} == {
        "good-a": "loaded", "good-b": "loaded", "broken": "on_disk", "swapped": "on_disk"}
    # a file replaced after start by a model this machine cannot hold is planned again
    write_llama(folder / "swapped.gguf", Shape(n_layers=8, n_embd=2048, n_head=16,
                                               n_head_kv=4, head_dim=128, n_ff=5632,
                                               n_vocab=32000), header_only=True)
    status, doc = _chat(server, "swapped")
    assert status == 507 and doc["error"]["code"] == "insufficient_memory", doc
    # a repaired file loads again
    write_llama(broken, Shape(n_layers=4, n_embd=256, n_head=4, n_head_kv=2, head_dim=64,
                              n_ff=512, n_vocab=2048), seed=2)
    assert _chat(server, "broken")[0] == 200


def test_a_model_used_while_the_idle_timer_waited_for_a_load_is_not_unloaded(
        tmp_path: Path) -> None:
    """The idle timer picks its victims, then waits for the router's lock (a load of
    another model holds it); a request served meanwhile makes the model not idle."""
    import asyncio
    import dataclasses

    from engine.hardware import detect
    from engine.server.model_catalog import folder_models
    from engine.server.router import LOADED, Router, RouterOptions
    from engine.server.router_plan import RouterPlanner
    from planner.request import Request

    write_llama(tmp_path / "only.gguf", Shape(n_layers=2, n_embd=128, n_head=2, n_head_kv=2,
                                              head_dim=64, n_ff=256, n_vocab=512))
    request = Request(context=256, parallel=1, advise=False)
    inventory = detect(measure=False)
    inventory = dataclasses.replace(inventory, host=dataclasses.replace(
        inventory.host, ram_available_bytes=(256 << 20) + request.host_reserve_bytes))
    router = Router(folder_models(tmp_path), RouterPlanner(inventory, request, n_threads=1),
                    RouterOptions(idle_timeout_s=0.5))
    entry = router.models["only"]

    async def scenario() -> None:
        await router.acquire(entry)
        router.release(entry)
        async with router._lock:  # as a long load of another model would
            await asyncio.sleep(1.0)  # the timer found it idle and now waits
            await router.acquire(entry)  # a request, served at once (it is loaded)
            router.release(entry)
        await asyncio.sleep(0.2)
        assert entry.state == LOADED

    try:
        asyncio.run(scenario())
    finally:
        router.stop()


# ---------------------------------------------------------------- images

def _png_header_only(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8,
                                                              2, 0, 0, 0))
            + chunk(b"IEND", b""))


def _jpeg(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "JPEG")
    return out.getvalue()


@pytest.fixture(name="vision", scope="module")
def vision_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A vision server whose PATH starts with an ``ffprobe`` and an ``ffmpeg`` that write
    a marker file when run (llama.cpp's media helper runs them on bytes stb cannot read)."""
    home = tmp_path_factory.mktemp("adversary-home")
    fake_bin = home / "fake-bin"
    fake_bin.mkdir()
    for name in ("ffprobe", "ffmpeg"):
        tool = fake_bin / name
        tool.write_text(f'#!/bin/sh\necho "$0 $*" >> "{home / "ffmpeg-ran"}"\nexit 1\n')
        tool.chmod(0o755)
    model, _projector = write_vision_pair(tmp_path_factory.mktemp("adversary-vision"))
    env = {"PATH": f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = ServerProcess(str(model), "--parallel", "2", "--ctx", "512", "--threads", "1",
                         "--no-plan", home=home, env=env).start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.mark.skipif(sys.platform == "win32", reason="the fake ffmpeg is a shell script")
@pytest.mark.parametrize(("image", "code"), [
    (_png_header_only(20, 20), "invalid_image"),
    (_png_header_only(4000, 4000)[:40], "invalid_image"),
    (png_bytes(64, 64, seed=1)[:300], "invalid_image"),
    (_jpeg(64, 64)[:200], "invalid_image"),
    (b"GIF89a" + struct.pack("<HH", 16, 16) + b"\x00\x00\x00", "invalid_image"),
    (_png_header_only(100000, 100000), "image_too_large"),
], ids=["png-no-pixel-data", "png-cut-in-header", "png-truncated", "jpeg-truncated",
        "gif-no-image", "png-bomb-header"])
def test_an_image_whose_pixels_do_not_decode_is_a_400_and_runs_no_program(
        vision: ServerProcess, image: bytes, code: str) -> None:
    url = "data:image/png;base64," + base64.b64encode(image).decode()
    status, doc = _chat(vision, vision.model, [
        {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "what?"}])
    assert status == 400, doc
    assert doc["error"]["code"] == code and doc["error"]["param"].startswith("messages")
    assert not (vision.home / "ffmpeg-ran").exists(), "the engine started ffprobe/ffmpeg"
    status, _ = _chat(vision, vision.model, [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(
            png_bytes(16, 16, seed=2)).decode()}}, {"type": "text", "text": "and this?"}])
    assert status == 200


# ---------------------------------------------------------------- stored responses

def test_a_response_just_stored_is_never_the_one_evicted(tmp_path: Path) -> None:
    """Files dated in the future (a clock set back, a restored folder) or a coarse clock
    must not make the store drop what it has just said it kept."""
    import os

    from engine.server.response_store import ResponseStore, StoreLimits

    store = ResponseStore(tmp_path, StoreLimits(max_count=2))
    old = [f"resp_{i:024x}" for i in (1, 2)]
    for rid in old:
        assert store.put(rid, {"response": {"id": rid}, "conversation": []})
        future = time.time() + 3600
        os.utime(tmp_path / f"{rid}.json", (future, future))
    new = "resp_" + "f" * 24
    assert store.put(new, {"response": {"id": new}, "conversation": []})
    assert store.get(new) is not None
    assert sum(store.get(rid) is not None for rid in old) == 1


def test_a_json_schema_format_whose_name_is_not_a_string_is_a_400(
        server: ServerProcess) -> None:
    """The response echoes ``text.format``; a number there would break the document."""
    status, doc = _post(server, "/v1/responses", {
        "model": server.model, "input": "hi", "max_output_tokens": 2,
        "text": {"format": {"type": "json_schema", "name": 5, "schema": {"type": "object"}}}})
    assert status == 400, doc
    assert doc["error"]["param"] == "text.format.name"
