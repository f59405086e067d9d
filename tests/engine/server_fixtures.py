"""Shared by the server tests: a live ``loadout serve`` subprocess, and the OpenAI schemas.

The schemas are the OpenAPI 3.0 ``components.schemas`` of the official OpenAI document
(``tests/data/openai-api-schemas.json``, MIT, licence alongside). OpenAPI 3.0 marks
nullable fields with ``nullable: true``; :func:`validate` rewrites that into JSON Schema
(``type: [T, "null"]``) and checks a document against one named schema.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "tests" / "data" / "openai-api-schemas.json"


def _nullable_to_json_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_nullable_to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable_to_json_schema(v) for k, v in node.items()}
    if out.pop("nullable", False):
        if "$ref" in out:
            return {"anyOf": [out, {"type": "null"}]}
        if "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = [*types, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


@functools.cache
def _components() -> dict[str, Any]:
    doc = json.loads(SCHEMAS.read_text(encoding="utf-8"))
    components: dict[str, Any] = _nullable_to_json_schema(doc["components"])
    return components


def validate(document: Any, schema_name: str) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``document`` fits the named schema."""
    root = {"$ref": f"#/components/schemas/{schema_name}", "components": _components()}
    jsonschema.Draft202012Validator(root).validate(document)


class ServerProcess:
    """``python -m loadout serve ... --port 0 --ready-json`` as a child process."""

    def __init__(self, *args: str, home: Path, env: dict[str, str] | None = None) -> None:
        self.args = args
        self.home = home
        self.extra_env = env or {}
        self.proc: subprocess.Popen[str] | None = None
        self.ready: dict[str, Any] = {}
        self._lines: queue.Queue[str | None] = queue.Queue()

    def start(self, timeout: float = 90.0) -> ServerProcess:
        env = {**os.environ, "LOADOUT_HOME": str(self.home), "HF_HUB_OFFLINE": "1",
               **self.extra_env}
        self.stderr_path = self.home / "serve-stderr.log"
        with open(self.stderr_path, "w", encoding="utf-8") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "loadout", "serve", *self.args, "--port", "0",
                 "--ready-json"],
                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        threading.Thread(target=self._pump, daemon=True).start()
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise TimeoutError("the server did not become ready") from None
        if line is None:
            self.stop()
            raise RuntimeError("the server exited before it was ready")
        self.ready = json.loads(line)
        if self.ready.get("event") != "ready":
            self.stop()
            raise RuntimeError(f"the server failed: {self.ready}")
        return self

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self._lines.put(line)
        self._lines.put(None)

    @property
    def url(self) -> str:
        return str(self.ready["url"])

    @property
    def base_url(self) -> str:
        return str(self.ready["base_url"])

    @property
    def model(self) -> str:
        return str(self.ready["model"])

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def get_json(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=30) as resp:
            return json.loads(resp.read())

    def get_text(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=30) as resp:
            return str(resp.read().decode("utf-8"))

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        return self.proc.returncode


def address_of(server: ServerProcess) -> tuple[str, int]:
    """The server's host and port, for raw sockets."""
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def post(server: ServerProcess, path: str, doc: Any) -> tuple[int, Any]:
    """POST ``doc`` (JSON, or raw bytes) to ``server``: the status and the JSON answer."""
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    req = urllib.request.Request(server.url + path, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.fixture(name="server", scope="session")
def server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One demo-model server for the session: 4 slots of 1024 tokens, one thread (the
    tests share two cores with other work; one thread does not stall on a busy core)."""
    home = tmp_path_factory.mktemp("serve-home")
    proc = ServerProcess("demo", "--parallel", "4", "--ctx", "1024", "--threads", "1",
                         home=home).start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(name="client", scope="session")
def client_fixture(server: ServerProcess) -> Any:
    """The real ``openai`` client pointed at the session server (no retries)."""
    import openai

    return openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0,
                         timeout=120)
