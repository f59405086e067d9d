"""``/v1/embeddings`` end to end: a real ``loadout serve`` on a synthetic BERT GGUF (random
weights, real llama.cpp), the real ``openai`` client and ``langchain-openai``.

Random weights say nothing about meaning, so the tests check what must hold for any
weights: the shape, unit length, determinism, that a batch gives the vectors each input
gives alone, that different texts differ, that base64 is the float vectors' bytes, and
that every malformed request is a 400 (never a 500).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.server_fixtures import ServerProcess, post
from tests.helpers.gguf_bert import BertShape, write_bert
from tests.helpers.gguf_factory import Shape, write_llama

pytestmark = pytest.mark.slow

N_EMBD = 64
N_CTX_TRAIN = 128
TEXTS = ["hello world", "the cat sat on the mat", "embedding 42, token!"]

# OpenAI's CreateEmbeddingResponse (the stored schema file has no embeddings section)
RESPONSE_SCHEMA = {
    "type": "object", "required": ["data", "model", "object", "usage"],
    "properties": {
        "object": {"const": "list"}, "model": {"type": "string"},
        "data": {"type": "array", "items": {
            "type": "object", "required": ["index", "embedding", "object"],
            "properties": {"index": {"type": "integer"}, "object": {"const": "embedding"},
                           "embedding": {"anyOf": [{"type": "array",
                                                    "items": {"type": "number"}},
                                                   {"type": "string"}]}}}},
        "usage": {"type": "object", "required": ["prompt_tokens", "total_tokens"],
                  "properties": {"prompt_tokens": {"type": "integer"},
                                 "total_tokens": {"type": "integer"}}}}}


def validate(doc: Any) -> None:
    jsonschema.Draft202012Validator(RESPONSE_SCHEMA).validate(doc)


@pytest.fixture(scope="module")
def bert_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("embed-home")
    path = write_bert(home / "tiny-bert.gguf", BertShape(n_embd=N_EMBD,
                                                         n_ctx_train=N_CTX_TRAIN))
    proc = ServerProcess(str(path), "--threads", "1", home=home).start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def bert_client(bert_server: ServerProcess) -> Any:
    return openai.OpenAI(base_url=bert_server.base_url, api_key="none", max_retries=0,
                         timeout=60)


def vectors(client: Any, model: str, inputs: Any) -> np.ndarray:
    resp = client.embeddings.create(model=model, input=inputs, encoding_format="float")
    return np.array([d.embedding for d in sorted(resp.data, key=lambda d: d.index)])


def test_embeddings_are_unit_vectors_of_the_model_size(bert_server: ServerProcess,
                                                       bert_client: Any) -> None:
    resp = bert_client.embeddings.create(model=bert_server.model, input=TEXTS,
                                         encoding_format="float")
    doc = resp.model_dump(exclude_unset=True)
    validate(doc)
    assert doc["object"] == "list" and doc["model"] == bert_server.model
    assert [d["index"] for d in doc["data"]] == [0, 1, 2]
    assert all(d["object"] == "embedding" for d in doc["data"])
    rows = np.array([d["embedding"] for d in doc["data"]])
    assert rows.shape == (3, N_EMBD)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    # [CLS] + words + [SEP]: "hello world" is 4 tokens
    tokens = [len(post(bert_server, "/tokenize", {"content": t, "add_special": True})[1]
                  ["tokens"]) for t in TEXTS]
    assert tokens[0] == 4
    assert resp.usage.prompt_tokens == resp.usage.total_tokens == sum(tokens)


def test_same_text_same_vector_and_different_texts_differ(bert_server: ServerProcess,
                                                          bert_client: Any) -> None:
    a = vectors(bert_client, bert_server.model, ["hello world", "hello world", "the dog"])
    np.testing.assert_array_equal(a[0], a[1])
    again = vectors(bert_client, bert_server.model, "hello world")
    np.testing.assert_allclose(again[0], a[0], atol=1e-6)
    assert float(a[0] @ a[2]) < 0.999


def test_a_batch_gives_the_vectors_each_input_gives_alone(bert_server: ServerProcess,
                                                          bert_client: Any) -> None:
    batch = vectors(bert_client, bert_server.model, TEXTS)
    for i, text in enumerate(TEXTS):
        alone = vectors(bert_client, bert_server.model, text)
        np.testing.assert_allclose(alone[0], batch[i], atol=1e-5)


def test_base64_is_the_little_endian_float32_of_the_vectors(
        bert_server: ServerProcess, bert_client: Any) -> None:
    status, doc = post(bert_server, "/v1/embeddings", {
        "model": bert_server.model, "input": TEXTS[:2], "encoding_format": "base64"})
    assert status == 200
    validate(doc)
    floats = vectors(bert_client, bert_server.model, TEXTS[:2])
    for i, item in enumerate(doc["data"]):
        decoded = np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4")
        assert decoded.shape == (N_EMBD,)
        np.testing.assert_allclose(decoded, floats[i], atol=1e-7)
    # the SDK's default asks for base64 and decodes it itself
    sdk = bert_client.embeddings.create(model=bert_server.model, input=TEXTS[:2])
    np.testing.assert_allclose(np.array(sdk.data[1].embedding), floats[1], atol=1e-7)


def test_token_id_inputs_embed_as_their_text(bert_server: ServerProcess,
                                             bert_client: Any) -> None:
    ids = [post(bert_server, "/tokenize", {"content": t, "add_special": True})[1]["tokens"]
           for t in TEXTS[:2]]
    by_text = vectors(bert_client, bert_server.model, TEXTS[:2])
    by_ids = vectors(bert_client, bert_server.model, ids)
    np.testing.assert_allclose(by_ids, by_text, atol=1e-6)
    one = vectors(bert_client, bert_server.model, ids[0])
    np.testing.assert_allclose(one[0], by_text[0], atol=1e-6)


def test_dimensions_equal_to_the_model_size_is_accepted(bert_server: ServerProcess) -> None:
    status, doc = post(bert_server, "/v1/embeddings", {
        "model": bert_server.model, "input": "hello", "dimensions": N_EMBD})
    assert status == 200 and len(doc["data"][0]["embedding"]) == N_EMBD


def _long_input() -> str:
    return " ".join(["hello"] * (N_CTX_TRAIN + 10))


@pytest.mark.parametrize(("body", "code", "needle"), [
    ({"input": ""}, "empty_input", "input[0]"),
    ({"input": ["a", ""]}, "empty_input", "input[1]"),
    ({"input": []}, "invalid_value", "empty list"),
    ({"input": [[1, 2], []]}, "empty_input", "input[1]"),
    ({"input": ["a", 5]}, "invalid_type", "not a mix"),
    ({"input": [True, False]}, "invalid_type", "input"),
    ({"input": [[1, "x"]]}, "invalid_type", "input[0]"),
    ({"input": {"text": "a"}}, "invalid_type", "input"),
    ({"input": [5, 10**9]}, "invalid_token", "10000000"),
    ({"input": [[5], [-1]]}, "invalid_token", "input[1]"),
    ({"input": ["hi", _long_input()]}, "context_length_exceeded", "input[1]"),
    ({"input": ["x"] * 2049}, "too_many_inputs", "2049"),
    ({"input": "hi", "dimensions": 32}, "dimensions_unsupported", "64 dimensions"),
    ({"input": "hi", "dimensions": 0}, "invalid_type", "dimensions"),
    ({"input": "hi", "encoding_format": "int8"}, "invalid_value", "encoding_format"),
    ({"input": "\ud800x"}, "invalid_text", "surrogate"),
    ({}, "missing_required_parameter", "input"),
])
def test_malformed_requests_get_a_clear_400(bert_server: ServerProcess, body: dict[str, Any],
                                            code: str, needle: str) -> None:
    status, doc = post(bert_server, "/v1/embeddings", {"model": bert_server.model, **body})
    assert status == 400, doc
    assert doc["error"]["code"] == code
    assert needle in doc["error"]["message"]


def test_bodies_that_are_not_requests_are_refused(bert_server: ServerProcess) -> None:
    assert post(bert_server, "/v1/embeddings", b"[1, 2]")[0] == 400
    assert post(bert_server, "/v1/embeddings", b"{not json")[0] == 400
    # one model serves any name, or none (as llama-server); the answer names it
    status, doc = post(bert_server, "/v1/embeddings", {"model": "other", "input": "a"})
    assert status == 200 and doc["model"] == bert_server.model
    status, doc = post(bert_server, "/embeddings", {"input": "a"})
    assert status == 200 and doc["model"] == bert_server.model
    status, doc = post(bert_server, "/embeddings", {"input": "a", "model": 3})
    assert status == 400 and doc["error"]["param"] == "model"


def test_chat_on_an_embedding_model_is_a_clear_400(bert_server: ServerProcess,
                                                   bert_client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        bert_client.chat.completions.create(
            model=bert_server.model, messages=[{"role": "user", "content": "hi"}])
    assert err.value.code == "model_not_generative"
    assert "/v1/embeddings" in str(err.value)
    status, doc = post(bert_server, "/v1/completions",
                       {"model": bert_server.model, "prompt": "hi"})
    assert status == 400 and doc["error"]["code"] == "model_not_generative"


def _child_commands(pid: int) -> list[str]:
    """The command lines of ``pid``'s child processes (Linux's /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append((stat.parent / "cmdline").read_text().replace("\0", " "))
        except (OSError, IndexError, ValueError):  # a process that ended meanwhile
            continue
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")
def test_an_embedding_model_starts_no_grammar_checker(bert_server: ServerProcess) -> None:
    status, doc = post(bert_server, "/v1/chat/completions", {
        "model": bert_server.model, "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_object"}})
    assert status == 400 and doc["error"]["code"] == "model_not_generative"
    assert not [c for c in _child_commands(bert_server.pid) if "--grammar-checker" in c]


def test_langchain_embeds_documents_and_queries(bert_server: ServerProcess,
                                                bert_client: Any) -> None:
    from langchain_openai import OpenAIEmbeddings

    # check_embedding_ctx_length=False: send the texts themselves (the default tokenizes
    # them with tiktoken, whose encodings are downloaded, into OpenAI's token ids)
    emb = OpenAIEmbeddings(model=bert_server.model, base_url=bert_server.base_url,
                           api_key="none", check_embedding_ctx_length=False, max_retries=0)
    docs = np.array(emb.embed_documents(TEXTS))
    query = np.array(emb.embed_query(TEXTS[1]))
    assert docs.shape == (3, N_EMBD)
    np.testing.assert_allclose(query, docs[1], atol=1e-6)
    np.testing.assert_allclose(docs, vectors(bert_client, bert_server.model, TEXTS),
                               atol=1e-6)


def test_metrics_count_embedded_inputs_and_tokens(bert_server: ServerProcess) -> None:
    def counter(name: str) -> float:
        for line in bert_server.get_text("/metrics").splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"{name} missing")

    before = counter("loadout_embedding_inputs_total")
    tokens_before = counter("loadout_embedding_tokens_total")
    assert post(bert_server, "/v1/embeddings",
                {"model": bert_server.model, "input": ["hello world", "the cat"]})[0] == 200
    assert counter("loadout_embedding_inputs_total") == before + 2
    assert counter("loadout_embedding_tokens_total") == tokens_before + 8
    assert 'endpoint="/v1/embeddings",status="200"' in bert_server.get_text("/metrics")


def test_a_model_without_pooling_starts_and_refuses_embeddings(tmp_path: Path) -> None:
    path = write_bert(tmp_path / "no-pool.gguf", BertShape(pooling="none"))
    server = ServerProcess(str(path), "--threads", "1", home=tmp_path).start()
    try:
        status, doc = post(server, "/v1/embeddings", {"model": server.model, "input": "a"})
        assert status == 400 and doc["error"]["code"] == "pooling_unsupported"
        assert "pooling_type none" in doc["error"]["message"]
        status, doc = post(server, "/tokenize", {"content": "hello"})
        assert status == 200 and doc["tokens"]
    finally:
        server.stop()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10**12) | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=12)
TOKEN_LISTS = st.lists(st.integers(-3, 400), max_size=6) | st.lists(
    st.lists(st.integers(-3, 400), max_size=5), max_size=4)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(route=st.sampled_from(["/v1/embeddings", "/tokenize", "/detokenize"]),
       value=JSON | TOKEN_LISTS, extra=JSON, fmt=JSON)
def test_no_body_gets_a_server_error(bert_server: ServerProcess, route: str, value: Any,
                                     extra: Any, fmt: Any) -> None:
    body = {"/v1/embeddings": {"model": bert_server.model, "input": value,
                               "encoding_format": fmt, "dimensions": extra},
            "/tokenize": {"content": value, "add_special": extra, "with_pieces": fmt},
            "/detokenize": {"tokens": value}}[route]
    status, doc = post(bert_server, route, json.dumps(body).encode())
    assert status in (200, 400), (status, doc)
    if status == 400:
        assert doc["error"]["message"] and doc["error"]["type"] == "invalid_request_error"


def test_a_causal_embedding_model_pools_its_last_token(tmp_path: Path) -> None:
    """A decoder that declares pooling (as Qwen3-Embedding does) is an embedding model
    whose sequences live in a KV cache: batched inputs must not see each other, and the
    cache is emptied between encodes."""
    path = write_llama(tmp_path / "causal-embed.gguf",
                       Shape(n_ctx_train=256, extra_kv={"llama.pooling_type": 3}))
    server = ServerProcess(str(path), "--threads", "1", home=tmp_path).start()
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0,
                               timeout=60)
        texts = ["abc def", "ghi", "abc def ghi jkl"]
        batch = vectors(client, server.model, texts)
        assert batch.shape == (3, 64)
        np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, rtol=1e-5)
        for i, text in enumerate(reversed(texts)):
            alone = vectors(client, server.model, text)
            np.testing.assert_allclose(alone[0], batch[2 - i], atol=1e-4)
        status, doc = post(server, "/v1/chat/completions", {
            "model": server.model, "messages": [{"role": "user", "content": "hi"}]})
        assert status == 400 and doc["error"]["code"] == "model_not_generative"
    finally:
        server.stop()
