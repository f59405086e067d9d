"""Real detection on this machine: host figures agree with /proc, probes are cached,
cancellation works, and ``loadout detect --json`` is a rig file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.errors import DetectionCancelled
from engine.hardware import Sources, detect
from engine.hardware.bandwidth import host_bandwidth
from engine.hardware.cache import FILE_NAME, ProbeCache, fingerprint
from engine.hardware.host import cpu_model, isa_flags, numa_nodes, probe_host
from engine.hardware.probe import DEFAULT_HOST_BANDWIDTH_GBPS
from planner.inventory import Inventory

ROOT = Path(__file__).resolve().parents[2]


def _meminfo() -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        out[key] = int(rest.split()[0]) * 1024
    return out


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    """One real, measuring detection for the module (probes cost about a second)."""
    cache = tmp_path_factory.mktemp("probe-cache")
    models = tmp_path_factory.mktemp("models")
    return detect(model_dirs=[models], sources=Sources(cache_dir=cache))


@pytest.mark.skipif(sys.platform != "linux", reason="compares with Linux's /proc")
def test_host_agrees_with_proc(measured: Inventory) -> None:
    host, mem = measured.host, _meminfo()
    assert host.ram_total_bytes == mem["MemTotal"]
    assert abs(host.ram_available_bytes - mem["MemAvailable"]) < 0.1 * mem["MemTotal"]
    assert host.ram_available_bytes <= host.ram_total_bytes
    assert host.threads == len(os.sched_getaffinity(0))
    assert 1 <= host.cores <= host.threads
    cpuinfo = Path("/proc/cpuinfo").read_text()
    assert host.cpu == re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M).group(1).strip()
    flags = set(re.search(r"^flags\s*:\s*(.+)$", cpuinfo, re.M).group(1).split())
    assert ("AVX2" in host.isa) == ("avx2" in flags)
    assert ("AVX512" in host.isa) == ("avx512f" in flags)
    nodes = len(list(Path("/sys/devices/system/node").glob("node[0-9]*")))
    assert host.numa_nodes == max(1, nodes)


def test_host_bandwidth_is_measured_and_plausible(measured: Inventory) -> None:
    assert "bandwidth_gbps" in measured.host.measured
    assert 1.0 < measured.host.bandwidth_gbps < 2000.0


def test_model_folder_disk_is_measured(measured: Inventory) -> None:
    (disk,) = measured.disks
    assert disk.measured and 0.001 < disk.read_gbps < 100.0
    assert "temp_file" in disk.notes  # an empty folder: a temporary file was read
    assert list(Path(disk.path).iterdir()) == []  # ... and removed


def test_detect_json_round_trips(measured: Inventory) -> None:
    doc = json.loads(json.dumps(measured.to_json()))
    assert Inventory.from_json(doc) == measured


def test_second_detect_uses_the_cache_and_remeasure_refreshes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    models = tmp_path / "models"
    models.mkdir()
    sources = Sources(cache_dir=tmp_path / "cache")
    first = detect(model_dirs=[models], sources=sources)
    saved = json.loads((tmp_path / "cache" / FILE_NAME).read_text())
    assert saved["host"]["bandwidth_gbps"] == first.host.bandwidth_gbps
    assert saved["cpu"]["prefill_gflops"] == first.host.core_prefill_gflops > 0
    second = detect(model_dirs=[models], measure=False, sources=sources)
    assert second.host.bandwidth_gbps == first.host.bandwidth_gbps
    assert second.host.core_prefill_gflops == first.host.core_prefill_gflops
    assert second.host.core_decode_gbps == first.host.core_decode_gbps
    assert second.disks[0].read_gbps == first.disks[0].read_gbps
    assert second.disks[0].measured and "bandwidth_gbps" in second.host.measured
    assert "core_decode_gbps" in second.host.measured
    # Planted figures prove the next detect reads the cache instead of measuring ...
    saved["host"]["bandwidth_gbps"] = 12345.0
    saved["cpu"]["prefill_gflops"] = 1234.5
    (tmp_path / "cache" / FILE_NAME).write_text(json.dumps(saved))
    planted = detect(model_dirs=[], sources=sources)
    assert planted.host.bandwidth_gbps == 12345.0
    assert planted.host.core_prefill_gflops == 1234.5
    # ... and that remeasure does not (on an idle machine: a new figure replaces the old).
    import engine.hardware as hw

    monkeypatch.setattr(hw, "_busy", lambda threads: False)
    again = detect(model_dirs=[], remeasure=True, sources=sources)
    assert again.host.bandwidth_gbps != 12345.0
    assert 0 < again.host.core_prefill_gflops != 1234.5
    cached = json.loads((tmp_path / "cache" / FILE_NAME).read_text())
    assert cached["host"]["bandwidth_gbps"] == again.host.bandwidth_gbps
    assert cached["cpu"]["prefill_gflops"] == again.host.core_prefill_gflops


def test_one_core_is_measured_with_the_engine(measured: Inventory) -> None:
    # what one core of any CPU of the last decade makes of Q4_K with llama.cpp's
    # kernels: tens to hundreds of GFLOP/s in a prompt batch, a few to tens of GB/s in
    # decode (this 2-core VM: about 130 and 15)
    host = measured.host
    assert 5.0 < host.core_prefill_gflops < 2000.0
    assert 0.5 < host.core_decode_gbps < 200.0
    assert {"core_prefill_gflops", "core_decode_gbps"} <= set(host.measured)
    assert "cpu_core_rate_default" not in measured.notes


def test_cache_of_another_machine_is_ignored(tmp_path: Path) -> None:
    ProbeCache("someone-else", host={"bandwidth_gbps": 999.0}).save(tmp_path)
    assert ProbeCache.load(tmp_path, "this-one").host == {}
    (tmp_path / FILE_NAME).write_text("{not json")
    assert ProbeCache.load(tmp_path, "this-one").host == {}
    a = fingerprint("cpu", 8, 64 * 2**30, [("RTX 4090", 24 * 2**30)])
    assert a == fingerprint("cpu", 8, 64 * 2**30 + 5, [("RTX 4090", 24 * 2**30)])
    assert a != fingerprint("cpu", 8, 64 * 2**30, [("RTX 3090", 24 * 2**30)])


def test_without_measuring_figures_are_nominal_and_say_so(tmp_path: Path) -> None:
    inv = detect(model_dirs=[tmp_path], measure=False,
                 sources=Sources(cache_dir=tmp_path / "empty-cache"))
    assert inv.host.bandwidth_gbps == DEFAULT_HOST_BANDWIDTH_GBPS
    assert "bandwidth_gbps" not in inv.host.measured
    assert "host_bandwidth_default" in inv.notes
    assert not inv.disks[0].measured and "read_nominal" in inv.disks[0].notes
    assert not (tmp_path / "empty-cache" / FILE_NAME).exists()


def test_progress_is_reported_in_order_and_cancel_stops(tmp_path: Path) -> None:
    steps: list[tuple[str, float]] = []
    detect(model_dirs=[], measure=False, progress=lambda s, f: steps.append((s, f)),
           sources=Sources(cache_dir=tmp_path))
    fractions = [f for _, f in steps]
    assert fractions == sorted(fractions) and steps[0][1] == 0.0 and steps[-1] == ("done", 1.0)
    flag = threading.Event()

    def cancel_at_engine(step: str, fraction: float) -> None:
        if step == "engine":
            flag.set()

    with pytest.raises(DetectionCancelled):
        detect(model_dirs=[], progress=cancel_at_engine, cancel=flag,
               sources=Sources(cache_dir=tmp_path))
    assert not (tmp_path / FILE_NAME).exists()  # nothing measured, nothing cached


def test_host_probe_stops_early_when_cancelled() -> None:
    import time

    start = time.perf_counter()
    gbps = host_bandwidth(1, size_bytes=32 * 2**20, budget_s=30.0, cancelled=lambda: True)
    assert gbps > 0 and time.perf_counter() - start < 5.0


def test_cpuinfo_parsing_for_arm_and_numa(tmp_path: Path) -> None:
    arm = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes asimddp sve i8mm\n" \
          "CPU implementer\t: 0x41\nModel\t: Raspberry Pi 5 Model B Rev 1.0\n"
    assert isa_flags(arm) == ("NEON", "DOTPROD", "I8MM", "SVE")
    assert cpu_model(arm) == "Raspberry Pi 5 Model B Rev 1.0"
    node = tmp_path / "devices" / "system" / "node"
    node.mkdir(parents=True)
    (node / "has_memory").write_text("0-1,3\n")
    assert numa_nodes(tmp_path) == 3
    assert numa_nodes(tmp_path / "nowhere") == 1


def test_cli_detect_json_is_a_rig_file_and_text_is_readable(tmp_path: Path) -> None:
    env = {**os.environ, "LOADOUT_HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "loadout", "detect", "--no-measure"]
    out = subprocess.run([*cmd, "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    doc = json.loads(out.stdout)
    assert Inventory.from_json(doc).to_json() == doc
    assert doc["host"]["ram_total_bytes"] == _meminfo()["MemTotal"]
    text = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=True).stdout
    assert doc["host"]["cpu"] in text and "GPUs: none" in text
    assert f"Disk {tmp_path / 'models'}" in text


def _this_key(tmp_path: Path) -> str:
    first = detect(model_dirs=[], measure=False, sources=Sources(cache_dir=tmp_path))
    return fingerprint(first.host.cpu, first.host.threads, first.host.ram_total_bytes,
                       [(g.name, g.total_bytes) for g in first.gpus])


def test_a_figure_taken_while_busy_is_kept_and_not_measured_again_by_a_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.hardware as hw

    sources = Sources(cache_dir=tmp_path)
    key = _this_key(tmp_path)
    # an implausibly low figure, taken busy: a probe would read far more than 0.5 GB/s
    core = hw.core_rate.cache_entry(hw.core_rate.CoreRate(0.5, 0.25), busy=True)
    ProbeCache(key, host={"bandwidth_gbps": 0.5, "busy": True, "measured_at": 1.0},
               cpu=core).save(tmp_path)
    before = (tmp_path / FILE_NAME).read_text()
    for busy in (True, False):  # busy or idle now, a measuring detection keeps them
        monkeypatch.setattr(hw, "_busy", lambda threads, busy=busy: busy)
        inv = detect(model_dirs=[], sources=sources)
        assert inv.host.bandwidth_gbps == 0.5 and "bandwidth_gbps" in inv.host.measured
        assert (inv.host.core_prefill_gflops, inv.host.core_decode_gbps) == (0.5, 0.25)
        assert "host_busy_while_measuring" in inv.notes  # ... and says how to fix it
    assert (tmp_path / FILE_NAME).read_text() == before  # nothing measured, nothing written


def test_measuring_again_keeps_the_best_while_busy_and_an_idle_figure_replaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.hardware as hw

    sources = Sources(cache_dir=tmp_path)
    key = _this_key(tmp_path)
    monkeypatch.setattr(hw, "_busy", lambda threads: True)
    # still busy: a higher earlier figure is kept (contention only slows a copy) ...
    ProbeCache(key, host={"bandwidth_gbps": 10_000.0, "busy": True}).save(tmp_path)
    kept = detect(model_dirs=[], remeasure=True, sources=sources)
    assert kept.host.bandwidth_gbps == 10_000.0 and "host_busy_while_measuring" in kept.notes
    # ... a lower one gives way to the new figure, the daily pass (refine) as --remeasure
    ProbeCache(key, host={"bandwidth_gbps": 0.5, "busy": True}).save(tmp_path)
    busy = detect(model_dirs=[], refine=True, sources=sources)
    assert busy.host.bandwidth_gbps > 0.5 and "host_busy_while_measuring" in busy.notes
    assert detect(model_dirs=[], sources=sources).host.bandwidth_gbps == \
        busy.host.bandwidth_gbps
    monkeypatch.setattr(hw, "_busy", lambda threads: False)  # idle now: a clean figure
    ProbeCache(key, host={"bandwidth_gbps": 10_000.0, "busy": True}).save(tmp_path)
    idle = detect(model_dirs=[], remeasure=True, sources=sources)
    assert 0.5 < idle.host.bandwidth_gbps < 10_000.0
    assert "host_busy_while_measuring" not in idle.notes
    assert ProbeCache.load(tmp_path, key).host["busy"] is False


def test_the_background_pass_is_due_once_a_day_for_busy_figures_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import engine.hardware as hw
    from engine.hardware import refine_due

    sources = Sources(cache_dir=tmp_path)
    key = _this_key(tmp_path)
    inv = detect(model_dirs=[], measure=False, sources=sources)
    now = time.time()
    day = 24 * 3600
    ProbeCache(key, host={"bandwidth_gbps": 9.0, "busy": False, "measured_at": now - 9 * day}
               ).save(tmp_path)
    assert not refine_due(inv, now=now, sources=sources)  # idle figures: never again
    ProbeCache(key, host={"bandwidth_gbps": 9.0, "busy": True, "measured_at": now - 3600}
               ).save(tmp_path)
    assert not refine_due(inv, now=now, sources=sources)  # measured within the day
    assert refine_due(inv, now=now + day, sources=sources)
    ProbeCache(key, cpu={"busy": True}).save(tmp_path)  # no time: due
    assert refine_due(inv, now=now, sources=sources)
    # the pass itself, still busy, starts the day again
    monkeypatch.setattr(hw, "_busy", lambda threads: True)
    ProbeCache(key, host={"bandwidth_gbps": 9.0, "busy": True, "measured_at": now - day}
               ).save(tmp_path)
    detect(model_dirs=[], refine=True, sources=Sources(
        cache_dir=tmp_path, core_probe=lambda cancelled: None))
    assert not refine_due(inv, sources=sources)
    assert refine_due(inv, now=time.time() + day, sources=sources)


def test_the_clock_comes_from_cpufreq_else_cpuinfo(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.hardware import host as host_module

    freq = tmp_path / "devices/system/cpu/cpu0/cpufreq"
    freq.mkdir(parents=True)
    (freq / "cpuinfo_max_freq").write_text("5200000\n")
    cpuinfo = "processor\t: 0\ncpu MHz\t\t: 800.000\nprocessor\t: 1\ncpu MHz\t\t: 2100.5\n"
    assert host_module.clock_ghz(cpuinfo, tmp_path) == 5.2
    monkeypatch.setattr(host_module.psutil, "cpu_freq", lambda: None)
    assert host_module.clock_ghz(cpuinfo, tmp_path / "none") == 2.1  # a VM: nominal clock
    assert host_module.clock_ghz("", tmp_path / "none") == 0.0       # unknown
    # this machine's detection fills it, and it survives a rig file
    detected = probe_host()
    assert detected.clock_ghz >= 0.0
    assert Inventory.from_json(Inventory((), detected, ()).to_json()).host.clock_ghz == \
        detected.clock_ghz


@pytest.mark.skipif(sys.platform != "win32", reason="the registry is Windows's")
def test_on_windows_the_cpu_is_named_as_its_maker_names_it() -> None:
    from engine.hardware.host import _windows_cpu

    name = _windows_cpu()
    assert name and "Family" not in name
    assert probe_host().cpu == name


def test_off_windows_the_registry_is_not_asked() -> None:
    from engine.hardware.host import _windows_cpu

    if sys.platform != "win32":
        assert _windows_cpu() == ""
