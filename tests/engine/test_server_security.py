"""Who may talk to the server: key policy, constant-time check, body limit, CORS.

Uses the ASGI app in-process with no model loaded (the routes behind the checks answer
503 "loading"), so the security layer is tested on its own, fast.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from engine.server.app import ServerState, build_app
from engine.server.security import SecurityPolicy, is_loopback, presented_key
from tests.engine.server_fixtures import validate


def _client(policy: SecurityPolicy, state: ServerState | None = None) -> TestClient:
    return TestClient(build_app(state or ServerState(), policy), base_url="http://127.0.0.1")


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.5.0.1", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("::", False), ("192.168.1.10", False),
    ("myhost.lan", False),
])
def test_loopback_detection(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_key_is_generated_only_off_loopback_and_never_replaces_a_given_one() -> None:
    local = SecurityPolicy.resolve("127.0.0.1", None)
    assert local.api_key is None and not local.key_generated
    lan = SecurityPolicy.resolve("0.0.0.0", None)
    assert lan.key_generated and lan.api_key and len(lan.api_key) > 40
    assert SecurityPolicy.resolve("0.0.0.0", None).api_key != lan.api_key
    given = SecurityPolicy.resolve("0.0.0.0", "my-key")
    assert given.api_key == "my-key" and not given.key_generated
    assert SecurityPolicy.resolve("127.0.0.1", "k").api_key == "k"


def test_key_comparison() -> None:
    policy = SecurityPolicy(api_key="sk-secret")
    assert policy.key_matches("sk-secret")
    for wrong in ("sk-secreT", "sk-secret ", "", None, "sk-secret-longer", "é"):
        assert not policy.key_matches(wrong)
    assert SecurityPolicy().key_matches(None)


def test_key_is_read_from_bearer_or_x_api_key() -> None:
    assert presented_key([(b"authorization", b"Bearer abc")]) == "abc"
    assert presented_key([(b"Authorization", b"bearer   abc ")]) == "abc"
    assert presented_key([(b"x-api-key", b"xyz")]) == "xyz"
    assert presented_key([(b"authorization", b"Basic abc")]) is None
    assert presented_key([]) is None


@pytest.fixture(name="keyed")
def keyed_fixture() -> Iterator[TestClient]:
    with _client(SecurityPolicy(api_key="sk-right")) as client:
        yield client


def test_requests_without_the_key_get_401_except_health(keyed: TestClient) -> None:
    for headers in ({}, {"Authorization": "Bearer sk-wrong"}, {"X-Api-Key": "nope"}):
        resp = keyed.get("/v1/models", headers=headers)
        assert resp.status_code == 401
        validate(resp.json(), "ErrorResponse")
        assert resp.json()["error"]["code"] == "invalid_api_key"
        assert resp.headers["www-authenticate"] == "Bearer"
    assert keyed.post("/v1/chat/completions", json={}).status_code == 401
    assert keyed.get("/metrics").status_code == 401
    assert keyed.get("/health").status_code == 503  # public: says "loading"


def test_the_right_key_passes(keyed: TestClient) -> None:
    for headers in ({"Authorization": "Bearer sk-right"}, {"X-Api-Key": "sk-right"}):
        resp = keyed.get("/v1/models", headers=headers)
        assert resp.status_code == 503 and resp.json()["error"]["code"] == "model_loading"
        assert resp.headers["retry-after"] == "1"


def test_health_reports_loading_progress_then_failure() -> None:
    state = ServerState()
    state.load_progress = 0.25
    with _client(SecurityPolicy(), state) as client:
        resp = client.get("/health")
        assert resp.status_code == 503
        assert resp.json() == {"status": "loading", "progress": 0.25}
        assert client.get("/v1/loadout/status").json()["state"] == "loading"
        state.fail("out of memory on CUDA0 loading /home/someone/models/x.gguf")
        # the reason (which may name paths) is for the log and the keyed status, not /health
        assert client.get("/health").json() == {"status": "error",
                                                "error": "the model failed to load"}
        resp = client.post("/v1/completions", json={"model": "x", "prompt": "hi"})
        assert resp.status_code == 500
        validate(resp.json(), "ErrorResponse")
        assert "/home" not in resp.text


def test_bodies_over_the_limit_are_413_with_or_without_a_length() -> None:
    with _client(SecurityPolicy(max_body_bytes=1000)) as client:
        big = b'{"prompt": "' + b"x" * 2000 + b'"}'
        resp = client.post("/v1/completions", content=big,
                           headers={"Content-Type": "application/json"})
        assert resp.status_code == 413
        validate(resp.json(), "ErrorResponse")

        def chunks() -> Iterator[bytes]:
            for _ in range(20):
                yield b"x" * 100

        resp = client.post("/v1/completions", content=chunks(),
                           headers={"Content-Type": "application/json"})
        assert resp.status_code == 413
        small = client.post("/v1/completions", json={"model": "x", "prompt": "hi"})
        assert small.status_code == 503  # passed the limit, the model is still loading


def test_cors_is_off_unless_an_origin_is_named() -> None:
    preflight = {"Origin": "http://app.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    with _client(SecurityPolicy()) as client:
        resp = client.get("/health", headers={"Origin": "http://app.example"})
        assert "access-control-allow-origin" not in resp.headers
        assert "access-control-allow-origin" not in \
            client.options("/v1/chat/completions", headers=preflight).headers
    policy = SecurityPolicy(api_key="k", cors_origins=("http://app.example",))
    with _client(policy) as client:
        resp = client.options("/v1/chat/completions", headers=preflight)
        assert resp.status_code == 200
        assert resp.headers["access-control-allow-origin"] == "http://app.example"
        denied = client.get("/v1/models", headers={"Origin": "http://app.example"})
        assert denied.status_code == 401  # CORS does not bypass the key...
        assert denied.headers["access-control-allow-origin"] == "http://app.example"
        other = client.get("/health", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers  # ...nor open to all
