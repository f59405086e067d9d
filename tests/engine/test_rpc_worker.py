"""The RPC worker: real ``loadout worker`` processes on loopback, probed by the main side."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.rpc import parse_endpoint, probe_worker

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"worker exited early: {err}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("worker did not start listening")


@pytest.fixture()
def worker() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "loadout", "worker", "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_listening(port, proc)
        yield f"127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_probe_reports_the_workers_devices_and_latency(worker: str) -> None:
    probe = probe_worker(worker)
    assert probe.reachable and probe.reason is None
    assert probe.version is not None and probe.version.startswith("7.")
    assert len(probe.devices) == 1
    assert probe.devices[0].total_bytes > 1 << 30
    assert probe.latency_s is not None and probe.latency_s < 1.0


def test_a_closed_port_is_reported_as_refused_at_once() -> None:
    started = time.monotonic()
    probe = probe_worker(f"127.0.0.1:{_free_port()}")
    assert not probe.reachable and probe.reason == "refused"
    assert time.monotonic() - started < 1.0


def test_a_silent_listener_is_reported_busy_within_the_timeout() -> None:
    # A port that accepts but never answers, as a worker serving another main does.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    held: list[socket.socket] = []
    accepter = threading.Thread(target=lambda: held.append(server.accept()[0]), daemon=True)
    accepter.start()
    try:
        started = time.monotonic()
        probe = probe_worker(f"127.0.0.1:{port}", timeout_s=0.5)
        assert not probe.reachable and probe.reason == "busy"
        assert time.monotonic() - started < 2.0
    finally:
        for s in held:
            s.close()
        server.close()


def test_worker_refuses_a_non_loopback_address_without_the_flag() -> None:
    result = subprocess.run([sys.executable, "-m", "loadout", "worker", "--host", "0.0.0.0",
                             "--port", str(_free_port())], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 1
    assert "--allow-remote" in result.stderr and "authentication" in result.stderr


@pytest.mark.parametrize("text,expected", [
    ("10.0.0.2:50052", ("10.0.0.2", 50052)),
    ("box", ("box", 50052)),
    ("localhost:6000", ("localhost", 6000)),
])
def test_parse_endpoint(text: str, expected: tuple[str, int]) -> None:
    assert parse_endpoint(text) == expected


def test_parse_endpoint_rejects_a_bad_port() -> None:
    with pytest.raises(ValueError):
        parse_endpoint("host:70000")


@pytest.mark.parametrize("text", ["[::1]:6000", "fe80::1"])
def test_an_ipv6_literal_is_refused_with_what_to_use_instead(text: str) -> None:
    # llama.cpp's RPC client splits an address at its first colon
    with pytest.raises(ValueError, match=r"IPv6.*host name or IPv4"):
        parse_endpoint(text)
