"""The desktop app's engine gets its keys through the environment, never the command line
(which every local user can read), and ``loadout serve`` reads them from there: the API key
for other devices, and the app's private key, without which that engine serves nobody
until the app makes it public."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from app.engine_launch import Binding, key_environment, serve_arguments
from engine.server.security import ACCESS_PATH, API_KEY_ENV, APP_KEY_ENV, APP_PUBLIC_ENV
from tests.engine.server_fixtures import ServerProcess

KEY = "sk-loadout-test-key-passed-through-the-environment"


def test_the_key_is_in_the_environment_not_the_arguments(tmp_path: Path) -> None:
    binding = Binding(lan=True, api_key=KEY)
    args = serve_arguments(tmp_path / "spec.json", "model.gguf", binding, 8080)
    assert KEY not in " ".join(args) and "--api-key" not in args
    assert key_environment(binding, "sk-app")[API_KEY_ENV] == KEY
    assert key_environment(binding, "sk-app")[APP_KEY_ENV] == "sk-app"
    assert key_environment(Binding(public=True))[APP_PUBLIC_ENV] == "1"
    # no key: the variables are emptied, so keys in the app's own environment are not used
    assert key_environment(Binding()) == {API_KEY_ENV: "", APP_KEY_ENV: "",
                                          APP_PUBLIC_ENV: ""}


@pytest.mark.slow
def test_serve_takes_its_key_from_the_environment(tmp_path: Path) -> None:
    proc = ServerProcess("demo", "--ctx", "256", "--parallel", "1", "--threads", "1",
                         home=tmp_path, env={API_KEY_ENV: KEY}).start()
    try:
        cmdline = Path(f"/proc/{proc.pid}/cmdline")
        if cmdline.exists():
            assert KEY.encode() not in cmdline.read_bytes()
        assert proc.ready["auth"] is True and proc.ready["api_key"] is None  # not shown
        with pytest.raises(urllib.error.HTTPError) as refused:
            proc.get_json("/v1/models")
        assert refused.value.code == 401
        request = urllib.request.Request(proc.url + "/v1/models",
                                         headers={"Authorization": f"Bearer {KEY}"})
        with urllib.request.urlopen(request, timeout=30) as resp:
            assert resp.status == 200
    finally:
        proc.stop()


APP_KEY = "sk-loadout-the-app-s-own-private-key-for-its-engine"


def _call(url: str, key: str | None = None, body: Any = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _keyless_answer(base_url: str, model: str) -> str:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=120)
    answer = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Say hi."}], max_tokens=4,
        temperature=0)
    return answer.choices[0].message.content or ""


@pytest.mark.slow
def test_the_app_s_engine_serves_only_the_app_until_it_is_made_public(tmp_path: Path
                                                                       ) -> None:
    import openai

    proc = ServerProcess("demo", "--ctx", "256", "--parallel", "1", "--threads", "1",
                         home=tmp_path, env={APP_KEY_ENV: APP_KEY}).start()
    try:
        cmdline = Path(f"/proc/{proc.pid}/cmdline")
        if cmdline.exists():
            assert APP_KEY.encode() not in cmdline.read_bytes()
        models = proc.url + "/v1/models"
        # loopback, no key or a wrong one: refused, in OpenAI's error shape
        for key in (None, "sk-loadout-wrong"):
            status, doc = _call(models, key)
            assert status == 401 and doc["error"]["type"] == "authentication_error"
        with pytest.raises(openai.AuthenticationError):
            _keyless_answer(proc.base_url, proc.model)
        assert _call(models, APP_KEY)[0] == 200
        assert _call(proc.url + "/health")[0] == 200  # liveness stays open, says nothing
        # only the app's key may open it
        access = proc.url + ACCESS_PATH
        assert _call(access, None, {"public": True})[0] == 401
        assert _call(access, "sk-loadout-wrong", {"public": True})[0] == 401
        status, doc = _call(access, APP_KEY, {"public": "yes"})
        assert status == 400 and doc["error"]["param"] == "public"
        assert _call(access, APP_KEY, {"public": True}) == (200, {"public": True})
        assert _keyless_answer(proc.base_url, proc.model)
        assert _call(models, APP_KEY)[0] == 200  # the app's key still works
        assert _call(access, APP_KEY, {"public": False}) == (200, {"public": False})
        assert _call(models)[0] == 401
        with pytest.raises(openai.AuthenticationError):
            _keyless_answer(proc.base_url, proc.model)
        assert _call(models, APP_KEY)[0] == 200
    finally:
        proc.stop()


@pytest.mark.slow
def test_serve_from_a_terminal_has_no_access_route_and_stays_public(tmp_path: Path) -> None:
    proc = ServerProcess("demo", "--ctx", "256", "--parallel", "1", "--threads", "1",
                         home=tmp_path, env={APP_KEY_ENV: ""}).start()
    try:
        assert _call(proc.url + "/v1/models")[0] == 200
        status, _ = _call(proc.url + ACCESS_PATH, "anything", {"public": False})
        assert status == 404
        assert _call(proc.url + "/v1/models")[0] == 200
    finally:
        proc.stop()
