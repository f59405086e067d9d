"""A bounded load test: 32 concurrent clients against 4 slots, every answer correct, none
refused, and the server's memory flat (RSS before/after, measured with psutil)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil
import pytest

from tests.engine.server_fixtures import (  # noqa: F401
    ServerProcess,
    client_fixture,
    server_fixture,
    validate,
)

pytestmark = pytest.mark.slow

CLIENTS = 32
REQUESTS_EACH = 3
MAX_TOKENS = 6
RSS_GROWTH_LIMIT = 24 * 1024 * 1024


def _one_client(client: Any, model: str, index: int, requests: int) -> list[str]:
    """Several requests; returns a list of problems (empty when all were right)."""
    problems: list[str] = []
    for j in range(requests):
        start = 10 * index + j
        prompt = f"{start}, {start + 1}, {start + 2}, {start + 3},"
        expected = f" {start + 4},"
        if (index + j) % 2 == 0:
            resp = client.completions.create(model=model, prompt=prompt,
                                             max_tokens=MAX_TOKENS, temperature=0)
            validate(resp.model_dump(exclude_unset=True), "CreateCompletionResponse")
            text = resp.choices[0].text
            count = resp.usage.completion_tokens
        else:
            pieces = list(client.completions.create(model=model, prompt=prompt,
                                                    max_tokens=MAX_TOKENS, temperature=0,
                                                    stream=True))
            text = "".join(p.choices[0].text for p in pieces)
            last = pieces[-1].model_dump(exclude_unset=True)
            validate(last, "CreateCompletionResponse")
            count = last["usage"]["completion_tokens"]
        if not text.startswith(expected):
            problems.append(f"{prompt!r} -> {text!r}, expected it to go on with {expected!r}")
        if not 1 <= count <= MAX_TOKENS:
            problems.append(f"{prompt!r}: {count} completion tokens")
    return problems


def _round(client: Any, server: ServerProcess, requests: int) -> list[str]:
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        results = list(pool.map(lambda i: _one_client(client, server.model, i, requests),
                                range(CLIENTS)))
    return [p for r in results for p in r]


def test_32_concurrent_clients_all_answered_correctly_with_flat_memory(
        server: ServerProcess, client: Any) -> None:
    proc = psutil.Process(server.pid)
    assert _round(client, server, 1) == []  # warm-up: allocators and caches settle
    before = proc.memory_info().rss
    assert _round(client, server, REQUESTS_EACH) == []
    after = proc.memory_info().rss
    print(f"server RSS {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB after "
          f"{CLIENTS * REQUESTS_EACH} requests from {CLIENTS} concurrent clients")
    assert after - before < RSS_GROWTH_LIMIT, f"RSS grew {(after - before) / 2**20:.1f} MiB"
    metrics = server.get_text("/metrics")
    assert 'status="503"' not in metrics and 'status="500"' not in metrics.replace(
        'endpoint="/v1/completions",status="500"', "")  # the error test may run first
    status = server.get_json("/v1/loadout/status")
    assert status["requests_in_flight"] == 0 and status["engine"]["queue_length"] == 0
    assert all(s["state"] == "idle" for s in status["engine"]["slots"])
