"""``/tokenize`` and ``/detokenize`` on the demo model (llama.cpp server's shapes), and
``/v1/embeddings`` on a chat model: refused by default, served with ``--embeddings``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest

from tests.engine.server_fixtures import (  # noqa: F401
    ServerProcess,
    client_fixture,
    post,
    server_fixture,
)

pytestmark = pytest.mark.slow

TEXT = "Hello, world! Ünïcödé → 数学 and code: def f(x): return x**2"


def test_tokenize_then_detokenize_gives_the_text_back(server: ServerProcess) -> None:
    status, doc = post(server, "/tokenize", {"content": TEXT})
    assert status == 200
    ids = doc["tokens"]
    assert ids and all(isinstance(t, int) for t in ids)
    status, back = post(server, "/detokenize", {"tokens": ids})
    assert status == 200 and back == {"content": TEXT}
    # the /v1 paths answer the same
    assert post(server, "/v1/tokenize", {"content": TEXT})[1]["tokens"] == ids


def test_pieces_join_to_the_text(server: ServerProcess) -> None:
    status, doc = post(server, "/tokenize", {"content": TEXT, "with_pieces": True})
    assert status == 200
    raw = b""
    for item in doc["tokens"]:
        assert set(item) == {"id", "piece"}
        piece = item["piece"]  # text, or the bytes of part of a character
        raw += piece.encode() if isinstance(piece, str) else bytes(piece)
    assert raw.decode() == TEXT
    plain = post(server, "/tokenize", {"content": TEXT})[1]["tokens"]
    assert [item["id"] for item in doc["tokens"]] == plain


def test_special_tokens_are_parsed_and_shown(server: ServerProcess) -> None:
    _, doc = post(server, "/tokenize", {"content": "<|im_start|>user"})
    ids = doc["tokens"]
    _, alone = post(server, "/tokenize", {"content": "<|im_start|>"})
    assert len(alone["tokens"]) == 1 and ids[0] == alone["tokens"][0]
    assert post(server, "/detokenize", {"tokens": ids})[1]["content"] == "<|im_start|>user"


@pytest.mark.parametrize(("path", "body", "param"), [
    ("/tokenize", {}, "content"),
    ("/tokenize", {"content": 5}, "content"),
    ("/tokenize", {"content": "a", "add_special": "yes"}, "add_special"),
    ("/tokenize", {"content": "a", "with_pieces": 1}, "with_pieces"),
    ("/tokenize", {"content": "\ud800"}, "content"),
    ("/tokenize", [1, 2], None),
    ("/detokenize", {}, "tokens"),
    ("/detokenize", {"tokens": "1 2"}, "tokens"),
    ("/detokenize", {"tokens": [1, -1]}, "tokens"),
    ("/detokenize", {"tokens": [1, 10**9]}, "tokens"),
    ("/detokenize", {"tokens": [1, True]}, "tokens"),
    ("/detokenize", {"tokens": [1.5]}, "tokens"),
])
def test_malformed_input_gets_a_clear_400(server: ServerProcess, path: str, body: Any,
                                          param: str | None) -> None:
    status, doc = post(server, path, body)
    assert status == 400, doc
    assert doc["error"]["param"] == param and doc["error"]["message"]


def test_a_chat_model_refuses_embeddings_unless_asked(server: ServerProcess) -> None:
    status, doc = post(server, "/v1/embeddings", {"model": server.model, "input": "hi"})
    assert status == 400 and doc["error"]["code"] == "model_not_embedding"
    assert "--embeddings" in doc["error"]["message"]


@pytest.fixture(scope="module")
def embedding_chat_server(tmp_path_factory: pytest.TempPathFactory
                          ) -> Iterator[ServerProcess]:
    home: Path = tmp_path_factory.mktemp("chat-embed-home")
    proc = ServerProcess("demo", "--embeddings", "--parallel", "1", "--ctx", "512",
                         "--threads", "1", home=home).start()
    try:
        yield proc
    finally:
        proc.stop()


def test_serve_embeddings_embeds_with_a_chat_model_and_still_chats(
        embedding_chat_server: ServerProcess) -> None:
    server = embedding_chat_server
    client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0,
                           timeout=120)
    texts = ["The capital of France is Paris.", "def add(a, b): return a + b"]
    resp = client.embeddings.create(model=server.model, input=texts, encoding_format="float")
    rows = np.array([d.embedding for d in resp.data])
    assert rows.shape == (2, 576)  # SmolLM2-135M's hidden size
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    alone = client.embeddings.create(model=server.model, input=texts[1],
                                     encoding_format="float")
    np.testing.assert_allclose(np.array(alone.data[0].embedding), rows[1], atol=1e-4)
    assert float(rows[0] @ rows[1]) < 0.9999
    chat = client.chat.completions.create(
        model=server.model, messages=[{"role": "user", "content": "Say hi"}],
        max_tokens=4, temperature=0)
    assert chat.choices[0].message.content
    status, doc = post(server, "/v1/embeddings",
                       {"model": server.model, "input": " ".join(["word"] * 600)})
    assert status == 400 and doc["error"]["code"] == "context_length_exceeded"
