"""llama-server compatibility over real HTTP: a ``loadout serve`` started with a
llama-server command line answers llama.cpp's native routes (``/completion``, ``/props``,
``/slots``, ``/apply-template``, ``/chat/completions/input_tokens``, ``/metrics`` with the
``llamacpp:`` names) in llama-server's shapes, serves any ``model`` name with its one
model, and keeps Loadout's own checks on every route."""

from __future__ import annotations

import json
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.server_fixtures import ServerProcess, post

pytestmark = pytest.mark.slow


@pytest.fixture(name="llama", scope="module")
def llama_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The demo model started as a llama-server command line would start it."""
    home = tmp_path_factory.mktemp("llama-home")
    proc = ServerProcess("-m", "demo", "-c", "2048", "-np", "2", "--temp", "0.0",
                         "--seed", "42", "--alias", "tiny,fim", "--tags", "chat,small",
                         "-b", "64", "-ub", "64", "--threads", "1", "--embeddings",
                         "--cors-origins", "localhost", "--no-jinja", "--offline",
                         home=home).start()
    try:
        yield proc
    finally:
        proc.stop()


def _stream(server: ServerProcess, path: str, doc: Any) -> list[dict[str, Any]]:
    req = urllib.request.Request(server.url + path, data=json.dumps(doc).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    events = []
    with urllib.request.urlopen(req, timeout=60) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                events.append(json.loads(line[6:]))
    return events


def _metrics(server: ServerProcess) -> tuple[dict[str, tuple[str, float]], dict[str, str]]:
    with urllib.request.urlopen(server.url + "/metrics", timeout=30) as resp:
        text, headers = resp.read().decode(), dict(resp.headers)
    kinds: dict[str, str] = {}
    out: dict[str, tuple[str, float]] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            kinds[name] = kind
        elif line.startswith("llamacpp:"):
            name, value = line.split(" ", 1)
            out[name] = (kinds[name], float(value))
    return out, headers


def test_a_llama_server_command_line_sets_slots_context_and_defaults(
        llama: ServerProcess) -> None:
    props = llama.get_json("/props")
    assert props["total_slots"] == 2
    # -c is the whole cache, shared by the -np slots (llama-server's meaning)
    assert props["default_generation_settings"]["n_ctx"] == 1024
    assert props["default_generation_settings"]["params"]["seed"] == 42
    assert props["model_path"].endswith(".gguf") and "/" not in props["model_path"]
    models = llama.get_json("/v1/models")["data"]
    assert len(models) == 1
    # named by the first alias in sorted order, as llama-server names it
    assert models[0]["id"] == "fim"
    assert set(models[0]["aliases"]) == {"tiny", "fim"}
    assert set(models[0]["tags"]) == {"chat", "small"}


def test_any_model_name_or_none_is_served_by_the_one_model(llama: ServerProcess) -> None:
    client = openai.OpenAI(base_url=llama.base_url, api_key="x", max_retries=0, timeout=60)
    res = client.chat.completions.create(model="gpt-3.5-turbo", max_tokens=4,
                                         messages=[{"role": "user", "content": "Hi"}])
    assert res.model == "fim"  # the answer names the model that answered
    status, doc = post(llama, "/v1/completions", {"prompt": "Hello", "max_tokens": 2})
    assert status == 200 and doc["model"] == "fim"
    # still checked: a model name of the wrong type is a 400
    status, doc = post(llama, "/v1/completions", {"prompt": "Hi", "model": 5})
    assert status == 400 and doc["error"]["param"] == "model"


def test_completion_answers_in_llama_servers_shape(llama: ServerProcess) -> None:
    prompt = "I believe the meaning of life is"
    n_prompt = len(post(llama, "/tokenize", {"content": prompt})[1]["tokens"])
    status, doc = post(llama, "/completion", {"prompt": prompt, "n_predict": 8,
                                              "cache_prompt": False})
    assert status == 200
    assert isinstance(doc["content"], str) and doc["stop"] is True
    assert doc["tokens"] == [] and doc["stop_type"] == "limit"
    timings = doc["timings"]
    assert timings["predicted_n"] == 8
    assert timings["prompt_n"] + timings["cache_n"] == n_prompt
    assert timings["prompt_ms"] > 0
    # the rate is over the steps after the first token (Loadout's decode t/s)
    assert timings["predicted_per_second"] == pytest.approx(
        7 * 1e3 / timings["predicted_ms"])
    status, again = post(llama, "/completions", {"prompt": prompt, "n_predict": 8,
                                                 "return_tokens": True})
    assert status == 200 and again["content"] == doc["content"]  # --temp 0.0: greedy
    assert len(again["tokens"]) == 8 and all(isinstance(t, int) for t in again["tokens"])


def test_streamed_completion_matches_the_whole_answer(llama: ServerProcess) -> None:
    body = {"prompt": "Once upon a time", "n_predict": 12}
    whole = post(llama, "/completion", body)[1]["content"]
    events = _stream(llama, "/completion", {**body, "stream": True})
    assert all(isinstance(e["stop"], bool) for e in events)
    pieces = [e for e in events if not e["stop"]]
    assert pieces and all(e["tokens"] for e in pieces)
    assert "".join(e["content"] for e in pieces) == whole
    last = events[-1]
    assert last["stop"] is True and last["timings"]["predicted_n"] == 12
    assert last["generation_settings"]["seed"] == 42


def test_n_probs_lists_each_token_with_its_alternatives(llama: ServerProcess) -> None:
    status, doc = post(llama, "/completion", {"prompt": "The sky is", "n_predict": 5,
                                              "n_probs": 10})
    assert status == 200
    probs = doc["completion_probabilities"]
    assert len(probs) == 5
    for tok in probs:
        assert tok["logprob"] <= 0 and len(tok["top_logprobs"]) == 10
        assert bytes(tok["bytes"]).decode("utf-8", "replace") == tok["token"]
        # greedy: the chosen token is the most likely one
        assert tok["id"] == tok["top_logprobs"][0]["id"]
    status, doc = post(llama, "/completion", {"prompt": "The sky is", "n_predict": 3,
                                              "n_probs": 4, "post_sampling_probs": True})
    assert all(0 < t["prob"] <= 1 and len(t["top_probs"]) == 4
               for t in doc["completion_probabilities"])
    events = _stream(llama, "/completion", {"prompt": "The sky is", "n_predict": 4,
                                            "n_probs": 3, "stream": True})
    assert all(len(e["completion_probabilities"]) == 1 for e in events if not e["stop"])


def test_many_prompts_and_token_prompts(llama: ServerProcess) -> None:
    text = "I believe the meaning of life is"
    tokens = post(llama, "/tokenize", {"content": text})[1]["tokens"]
    status, docs = post(llama, "/completion", {"prompt": [tokens, text], "n_predict": 6})
    assert status == 200 and isinstance(docs, list) and len(docs) == 2
    assert docs[0]["content"] == docs[1]["content"]
    status, doc = post(llama, "/completion", {"prompt": {"prompt_string": text},
                                              "n_predict": 6})
    assert status == 200 and doc["content"] == docs[0]["content"]
    status, doc = post(llama, "/completion", {"prompt": {"prompt_string": "x <__media__>",
                                                         "multimodal_data": ["AAAA"]}})
    assert status == 400  # the demo model takes no images


def test_logit_bias_pairs_ban_a_token(llama: ServerProcess) -> None:
    body = {"prompt": "The capital of France is", "n_predict": 1, "return_tokens": True}
    first = post(llama, "/completion", body)[1]["tokens"][0]
    status, doc = post(llama, "/completion", {**body, "logit_bias": [[first, False]]})
    assert status == 200 and doc["tokens"][0] != first
    status, doc = post(llama, "/completion", {**body, "logit_bias": [["x", "y"]]})
    assert status == 400 and doc["error"]["param"] == "logit_bias"


def test_json_schema_at_the_top_level_and_in_json_object(llama: ServerProcess) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    status, doc = post(llama, "/completion", {"prompt": "A number:", "n_predict": 24,
                                              "json_schema": schema})
    assert status == 200 and isinstance(json.loads(doc["content"])["n"], int)
    status, doc = post(llama, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Give a number"}], "max_tokens": 24,
        "response_format": {"type": "json_object", "schema": schema}})
    assert status == 200
    assert isinstance(json.loads(doc["choices"][0]["message"]["content"])["n"], int)


def test_a_prompt_past_the_context_says_so_as_llama_server(llama: ServerProcess) -> None:
    status, doc = post(llama, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "What is the best book? " * 400}]})
    assert status == 400
    err = doc["error"]
    assert err["type"] == "exceed_context_size_error"
    assert err["code"] == "context_length_exceeded"
    assert err["n_ctx"] == 1024 and err["n_prompt_tokens"] > 1024
    status, doc = post(llama, "/completion", {"prompt": "word " * 1500})
    assert status == 400 and doc["error"]["type"] == "exceed_context_size_error"


def test_metrics_carry_llama_servers_names(llama: ServerProcess) -> None:
    before, headers = _metrics(llama)
    assert int(headers["process-start-time-unix"]) > 0
    status, doc = post(llama, "/completion", {"prompt": "the quick brown fox", "n_predict": 4})
    assert status == 200
    after, _ = _metrics(llama)
    for name in ("prompt_tokens_total", "prompt_tokens_cached_total", "tokens_predicted_total",
                 "n_decode_total", "prompt_seconds_total"):
        assert after[f"llamacpp:{name}"][0] == "counter"
    for name in ("requests_processing", "requests_deferred", "predicted_tokens_seconds"):
        assert after[f"llamacpp:{name}"][0] == "gauge"

    def grew(name: str) -> float:
        return after[f"llamacpp:{name}"][1] - before[f"llamacpp:{name}"][1]

    assert grew("tokens_predicted_total") == doc["timings"]["predicted_n"]
    assert grew("prompt_tokens_total") == doc["timings"]["prompt_n"]
    assert grew("prompt_tokens_cached_total") == doc["timings"]["cache_n"]
    assert grew("n_decode_total") > 0
    assert after["llamacpp:requests_processing"][1] == 0


def test_slots_apply_template_and_input_tokens(llama: ServerProcess) -> None:
    slots = llama.get_json("/slots")
    assert len(slots) == 2 and all(s["n_ctx"] == 1024 for s in slots)
    assert not any(s["is_processing"] for s in slots)
    messages = [{"role": "system", "content": "You are a test."},
                {"role": "user", "content": "Hi there"}]
    status, doc = post(llama, "/apply-template", {"messages": messages})
    assert status == 200
    prompt = doc["prompt"]
    assert "You are a test." in prompt and "<|im_start|>user\nHi there" in prompt
    status, count = post(llama, "/chat/completions/input_tokens", {"messages": messages})
    assert status == 200
    n = len(post(llama, "/tokenize", {"content": prompt})[1]["tokens"])
    assert count["input_tokens"] == n
    status, doc = post(llama, "/apply-template", {"messages": "nope"})
    assert status == 400 and doc["error"]["param"] == "messages"


def test_streamed_chat_starts_with_null_content(llama: ServerProcess) -> None:
    events = _stream(llama, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "stream": True})
    first = events[0]["choices"][0]["delta"]
    assert first == {"role": "assistant", "content": None}
    assert all(e["choices"][0]["delta"].get("content") != "" for e in events)
    timings = events[-1]["timings"]
    assert timings["predicted_n"] == 4 and "decode_tps" in timings


def test_embedding_inputs_as_content_objects(llama: ServerProcess) -> None:
    status, plain = post(llama, "/v1/embeddings", {"input": "hello world"})
    assert status == 200
    status, parts = post(llama, "/v1/embeddings", {"input": {"content": [
        {"type": "text", "text": "hello "}, {"type": "text", "text": "world"}]}})
    assert status == 200
    assert parts["data"][0]["embedding"] == pytest.approx(plain["data"][0]["embedding"])
    status, mixed = post(llama, "/v1/embeddings", {"input": [
        "a", {"prompt_string": "b"}, {"content": [{"type": "text", "text": "c"}]}]})
    assert status == 200 and len(mixed["data"]) == 3
    status, doc = post(llama, "/v1/embeddings", {"input": {"content": "string"}})
    assert status == 400 and doc["error"]["param"] == "input"


def _preflight(server: ServerProcess, origin: str) -> tuple[int, dict[str, str]]:
    req = urllib.request.Request(server.url + "/completions", method="OPTIONS", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "Authorization"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers)


@pytest.mark.parametrize("origin", ["http://localhost", "http://localhost:8080",
                                    "http://127.0.0.1:3000", "http://[::1]:3000"])
def test_cors_localhost_allows_pages_of_this_machine(llama: ServerProcess,
                                                     origin: str) -> None:
    status, headers = _preflight(llama, origin)
    assert status == 200 and headers["access-control-allow-origin"] == origin


@pytest.mark.parametrize("origin", ["http://evil.com", "http://localhost.evil.com",
                                    "http://notlocalhost"])
def test_cors_localhost_refuses_other_origins(llama: ServerProcess, origin: str) -> None:
    status, headers = _preflight(llama, origin)
    assert status == 403 and "access-control-allow-origin" not in \
        {k.lower() for k in headers}


def test_switched_off_endpoints_answer_501(tmp_path: Path) -> None:
    proc = ServerProcess("demo", "--ctx", "256", "--parallel", "1", "--threads", "1",
                         "--no-slots", "--no-metrics", "--no-warmup", home=tmp_path).start()
    try:
        for path in ("/slots", "/metrics"):
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(proc.url + path, timeout=30)
            assert info.value.code == 501
            assert json.loads(info.value.read())["error"]["type"] == "not_supported_error"
        assert proc.get_json("/props")["endpoint_slots"] is False
    finally:
        proc.stop()


def test_host_list_serves_every_address(tmp_path: Path) -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    proc = ServerProcess("demo", "--ctx", "256", "--parallel", "1", "--threads", "1",
                         "--no-warmup", "--host", "127.0.0.1,::1", home=tmp_path).start()
    try:
        port = proc.url.rsplit(":", 1)[1]
        for host in ("127.0.0.1", "[::1]"):
            with urllib.request.urlopen(f"http://{host}:{port}/health", timeout=30) as resp:
                assert resp.status == 200
    finally:
        proc.stop()


def test_chat_with_n_choices(llama: ServerProcess) -> None:
    status, doc = post(llama, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Name a colour"}], "max_tokens": 4,
        "n": 3, "temperature": 1.0})
    assert status == 200
    assert [c["index"] for c in doc["choices"]] == [0, 1, 2]
    assert all(c["message"]["role"] == "assistant" for c in doc["choices"])
    one = post(llama, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Name a colour"}], "max_tokens": 4})[1]
    assert doc["usage"]["prompt_tokens"] == 3 * one["usage"]["prompt_tokens"]
    status, doc = post(llama, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Hi"}], "n": 2, "stream": True})
    assert status == 400 and doc["error"]["param"] == "n"


@pytest.mark.parametrize("extra", [{}, {"filename": "ok"}, {"filename": 1, "text": "a"}])
def test_infill_checks_its_files(llama: ServerProcess, extra: dict[str, Any]) -> None:
    status, doc = post(llama, "/infill", {"input_prefix": "def f(", "input_suffix": ")\n",
                                          "input_extra": [extra]})
    assert status == 400 and doc["error"]["param"] == "input_extra[0]"


def test_verbose_echoes_the_rendered_prompt(llama: ServerProcess) -> None:
    body = {"messages": [{"role": "system", "content": "Book"},
                         {"role": "user", "content": "What is the best book"}],
            "max_tokens": 2}
    status, doc = post(llama, "/v1/chat/completions", {**body, "verbose": True})
    assert status == 200
    prompt = doc["__verbose"]["prompt"]
    assert prompt == post(llama, "/apply-template", body)[1]["prompt"]
    assert "<|im_start|>user\nWhat is the best book" in prompt
    assert "__verbose" not in post(llama, "/v1/chat/completions", body)[1]


@pytest.mark.parametrize(("origin", "allowed"), [
    ("http://localhost", True), ("https://127.0.0.1:3000", True), ("http://[::1]:8080", True),
    ("http://127.1.2.3", True), ("http://localhost.evil.com", False),
    ("http://evil.com/localhost", False), ("http://notlocalhost", False),
    ("http://127.0.0.1.evil.com", False), ("file://localhost", False),
])
def test_the_localhost_keyword_means_this_machine_only(origin: str, allowed: bool) -> None:
    from engine.server.llamacpp.cors import origin_listed
    from engine.server.security import SecurityPolicy

    assert origin_listed(origin, ("localhost",)) is allowed
    assert SecurityPolicy(cors_origins=("localhost",)).origin_allowed(origin) is allowed
    assert not origin_listed(origin, ("http://app.example",))


def test_a_final_assistant_message_is_continued(llama: ServerProcess) -> None:
    messages = [{"role": "user", "content": "What is the best book"},
                {"role": "assistant", "content": "The best book is"}]
    status, doc = post(llama, "/v1/chat/completions", {"messages": messages, "max_tokens": 4,
                                                       "verbose": True})
    assert status == 200
    prompt = doc["__verbose"]["prompt"]
    assert prompt.endswith("<|im_start|>assistant\nThe best book is")
    assert prompt.count("<|im_start|>assistant") == 1
    status, doc = post(llama, "/v1/chat/completions", {
        "messages": messages, "continue_final_message": True, "add_generation_prompt": True})
    assert status == 400 and doc["error"]["param"] == "continue_final_message"
    status, doc = post(llama, "/v1/chat/completions", {
        "messages": [*messages, {"role": "assistant", "content": "x"}]})
    assert status == 400 and doc["error"]["param"] == "messages[2]"


def test_a_named_chat_template_renders_its_format(tmp_path: Path) -> None:
    proc = ServerProcess("demo", "--ctx", "256", "--parallel", "1", "--threads", "1",
                         "--no-warmup", "--chat-template", "command-r", home=tmp_path).start()
    try:
        status, doc = post(proc, "/apply-template", {"messages": [
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": "Hi there"}]})
        assert status == 200
        assert doc["prompt"] == (
            "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are a test.<|END_OF_TURN_TOKEN|>"
            "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi there<|END_OF_TURN_TOKEN|>"
            "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>")
    finally:
        proc.stop()


def test_n_predict_caps_answers_instead_of_refusing(tmp_path: Path) -> None:
    proc = ServerProcess("demo", "--ctx", "256", "--parallel", "1", "--threads", "1",
                         "--no-warmup", "-n", "3", "--temp", "0", home=tmp_path).start()
    try:
        status, doc = post(proc, "/v1/chat/completions", {
            "messages": [{"role": "user", "content": "Count to fifty"}], "max_tokens": 200})
        assert status == 200 and doc["usage"]["completion_tokens"] <= 3
        status, doc = post(proc, "/completion", {"prompt": "One, two,", "n_predict": 50})
        assert status == 200 and doc["timings"]["predicted_n"] <= 3
    finally:
        proc.stop()
