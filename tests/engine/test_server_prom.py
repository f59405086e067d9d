"""The Prometheus text format: what a scraper reads must add up."""

from __future__ import annotations

import re

import pytest

from engine.server.prom import Registry

LINE = re.compile(r'^([a-z_]+)(\{[^}]*\})? (\S+)$')


def _samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = LINE.match(line)
        assert m, f"not a sample line: {line!r}"
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def test_every_family_has_help_and_type_and_the_text_ends_in_a_newline() -> None:
    r = Registry()
    r.counter("a_total", "things")
    r.gauge("b", "level")
    r.histogram("c_seconds", "latency", [1.0])
    text = r.render()
    assert text.endswith("\n")
    for name, kind in (("a_total", "counter"), ("b", "gauge"), ("c_seconds", "histogram")):
        assert f"# HELP {name} " in text and f"# TYPE {name} {kind}" in text


def test_counter_adds_per_label_set_and_refuses_to_go_down() -> None:
    r = Registry()
    c = r.counter("req_total", "requests", ("code",))
    c.inc(labels=("200",))
    c.inc(2, labels=("200",))
    c.inc(labels=("404",))
    s = _samples(r.render())
    assert s['req_total{code="200"}'] == 3 and s['req_total{code="404"}'] == 1
    with pytest.raises(ValueError):
        c.inc(-1, labels=("200",))
    with pytest.raises(ValueError):
        c.inc(labels=())


def test_histogram_buckets_are_cumulative_with_sum_and_count() -> None:
    r = Registry()
    h = r.histogram("ttft_seconds", "ttft", [0.1, 1.0, 10.0])
    for value in (0.05, 0.5, 0.7, 5.0, 50.0):
        h.observe(value)
    s = _samples(r.render())
    assert [s[f'ttft_seconds_bucket{{le="{b}"}}'] for b in ("0.1", "1", "10", "+Inf")] == \
        [1, 3, 4, 5]
    assert s["ttft_seconds_count"] == 5
    assert s["ttft_seconds_sum"] == pytest.approx(56.25)


def test_label_values_are_escaped() -> None:
    r = Registry()
    c = r.counter("x_total", "x", ("path",))
    c.inc(labels=('a"b\\c\nd',))
    assert 'x_total{path="a\\"b\\\\c\\nd"} 1' in r.render()


def test_gauge_source_is_read_at_render_and_a_failing_one_does_not_break_the_scrape() -> None:
    r = Registry()
    level = [3.0]
    r.gauge("queue", "waiting", source=lambda: [((), level[0])])

    def broken() -> list[tuple[tuple[str, ...], float]]:
        raise RuntimeError("probe failed")

    r.gauge("broken", "fails", source=broken)
    assert _samples(r.render())["queue"] == 3
    level[0] = 7
    s = _samples(r.render())
    assert s["queue"] == 7 and "broken" not in s


def test_a_name_cannot_be_registered_twice() -> None:
    r = Registry()
    r.counter("dup_total", "x")
    with pytest.raises(ValueError):
        r.gauge("dup_total", "y")
