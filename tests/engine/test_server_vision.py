"""Images through ``loadout serve`` with the real ``openai`` client: a synthetic vision
pair served, data URLs, http URLs only when allowed (a local server on port 0), limits."""

from __future__ import annotations

import base64
import http.server
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.server_fixtures import ServerProcess, validate
from tests.helpers.gguf_mmproj import png_bytes, write_vision_pair

pytestmark = pytest.mark.slow


def data_url(image: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(image).decode()


def ask(url: str, text: str = "What is in this picture?") -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": text},
                                         {"type": "image_url", "image_url": {"url": url}}]}]


@pytest.fixture(scope="module")
def images_site() -> Iterator[str]:
    """A local HTTP server on port 0 serving /small.png, /big.png and /slow.png."""
    files = {"/small.png": png_bytes(20, 20, seed=3), "/big.png": png_bytes(600, 600, seed=4)}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/slow.png":
                threading.Event().wait(3.0)
            body = files.get(self.path, files["/small.png"])
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def vision_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    model, _projector = write_vision_pair(tmp_path_factory.mktemp("vision-serve"))
    # the projector beside the model is found without --mmproj
    proc = ServerProcess(str(model), "--parallel", "2", "--ctx", "512", "--threads", "1",
                         "--no-plan", "--allow-image-urls", "--allow-private-image-urls",
                         "--image-url-timeout", "1",
                         "--max-image-bytes", "200000", "--max-images", "2",
                         home=tmp_path_factory.mktemp("vision-home")).start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def client(vision_server: ServerProcess) -> Any:
    return openai.OpenAI(base_url=vision_server.base_url, api_key="x", max_retries=0,
                         timeout=60)


def test_an_image_content_part_is_answered_with_its_figures(
        vision_server: ServerProcess, client: Any) -> None:
    resp = client.chat.completions.create(
        model=vision_server.model, messages=ask(data_url(png_bytes(32, 32, seed=1))),
        max_tokens=4, temperature=0)
    doc = resp.model_dump(exclude_unset=True)
    validate(doc, "CreateChatCompletionResponse")
    timings = doc["timings"]
    assert timings["images"] == 1 and timings["image_tokens"] == 16
    assert 0 < timings["image_encode_s"] < timings["ttft_s"]
    assert resp.usage.prompt_tokens > 16


def test_a_follow_up_about_the_same_image_reuses_the_cache(
        vision_server: ServerProcess, client: Any) -> None:
    url = data_url(png_bytes(24, 24, seed=7))
    first = client.chat.completions.create(model=vision_server.model, messages=ask(url),
                                           max_tokens=2, temperature=0)
    follow = [*ask(url), {"role": "assistant", "content": first.choices[0].message.content},
              {"role": "user", "content": "And its colour?"}]
    second = client.chat.completions.create(model=vision_server.model, messages=follow,
                                            max_tokens=2, temperature=0)
    assert second.usage.prompt_tokens_details.cached_tokens > 16


def test_an_http_image_url_is_fetched_when_allowed(
        vision_server: ServerProcess, client: Any, images_site: str) -> None:
    resp = client.chat.completions.create(model=vision_server.model,
                                          messages=ask(images_site + "/small.png"),
                                          max_tokens=2, temperature=0)
    assert resp.model_dump()["timings"]["images"] == 1


@pytest.mark.parametrize(("path", "code"), [("/big.png", "image_too_large"),
                                            ("/slow.png", "image_fetch_failed")])
def test_a_url_over_the_size_or_time_limit_is_a_400(
        vision_server: ServerProcess, client: Any, images_site: str, path: str,
        code: str) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=vision_server.model,
                                       messages=ask(images_site + path), max_tokens=2)
    assert info.value.code == code


@pytest.mark.parametrize(("messages", "code"), [
    (ask("data:image/png;base64,!!!"), "invalid_image_url"),
    (ask(data_url(b"GIF89a" + b"\x00" * 8)), "invalid_image"),
    (ask(data_url(b"plain text, not an image")), "invalid_image"),
    (ask("ftp://example.invalid/x.png"), "invalid_image_url"),
    (ask(data_url(png_bytes(8, 8))) + ask(data_url(png_bytes(8, 8)))
     + ask(data_url(png_bytes(8, 8))), "too_many_images"),
])
def test_bad_images_get_a_clear_400(vision_server: ServerProcess, client: Any,
                                    messages: list[dict[str, Any]], code: str) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=vision_server.model, messages=messages,
                                       max_tokens=2)
    assert info.value.code == code
    assert vision_server.get_json("/health") == {"status": "ok"}


def test_a_huge_pixel_count_is_refused_from_the_header(vision_server: ServerProcess) -> None:
    # a PNG header claiming 100000 x 100000 pixels: refused before anything decodes it
    header = png_bytes(1, 1)[:16] + (100000).to_bytes(4, "big") * 2 + png_bytes(1, 1)[24:]
    body = json.dumps({"model": vision_server.model, "messages": ask(data_url(header))})
    req = urllib.request.Request(vision_server.url + "/v1/chat/completions",
                                 data=body.encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=30)
    doc = json.loads(info.value.read())
    assert info.value.code == 400 and doc["error"]["code"] == "image_too_large"
    assert "100000x100000" in doc["error"]["message"]


def test_a_text_only_model_refuses_images(tmp_path: Path) -> None:
    proc = ServerProcess("demo", "--parallel", "1", "--ctx", "256", "--threads", "1",
                         "--no-plan", "--no-warmup", home=tmp_path).start()
    try:
        client = openai.OpenAI(base_url=proc.base_url, api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(model=proc.model,
                                           messages=ask(data_url(png_bytes(8, 8))),
                                           max_tokens=2)
        assert info.value.code == "images_not_supported"
        assert "vision projector" in str(info.value)
        # and http URLs are off unless the server was started with --allow-image-urls
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(model=proc.model,
                                           messages=ask("http://127.0.0.1:9/x.png"),
                                           max_tokens=2)
        assert info.value.code == "image_urls_disabled"
    finally:
        proc.stop()
