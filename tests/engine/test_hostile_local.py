"""The desktop app's engine gets its key through the environment, never the command line
(which every local user can read), and ``loadout serve`` reads it from there."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from app.engine_launch import Binding, key_environment, serve_arguments
from engine.server.security import API_KEY_ENV
from tests.engine.server_fixtures import ServerProcess

KEY = "sk-loadout-test-key-passed-through-the-environment"


def test_the_key_is_in_the_environment_not_the_arguments(tmp_path: Path) -> None:
    binding = Binding(lan=True, api_key=KEY)
    args = serve_arguments(tmp_path / "spec.json", "model.gguf", binding, 8080)
    assert KEY not in " ".join(args) and "--api-key" not in args
    assert key_environment(binding) == {API_KEY_ENV: KEY}
    # no key: the variable is emptied, so a key in the app's own environment is not used
    assert key_environment(Binding()) == {API_KEY_ENV: ""}


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
