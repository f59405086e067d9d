"""The host: CPU model, cores and threads, ISA flags llama.cpp cares about, RAM, NUMA."""

from __future__ import annotations

import logging
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import psutil

from engine.hardware.probe import DEFAULT_HOST_BANDWIDTH_GBPS
from engine.hardware.sysfs import read_text
from planner.inventory import Host

log = logging.getLogger(__name__)

# cpuinfo flag -> the name Loadout reports (llama.cpp's kernels pick on these).
_X86_FLAGS = {
    "avx": "AVX", "avx2": "AVX2", "fma": "FMA", "f16c": "F16C", "avx_vnni": "AVX_VNNI",
    "avx512f": "AVX512", "avx512_vnni": "AVX512_VNNI", "avx512_bf16": "AVX512_BF16",
    "avx512vbmi": "AVX512_VBMI", "amx_int8": "AMX_INT8", "amx_bf16": "AMX_BF16",
}
_ARM_FLAGS = {
    "asimd": "NEON", "asimddp": "DOTPROD", "i8mm": "I8MM", "sve": "SVE", "sve2": "SVE2",
    "fphp": "FP16", "sme": "SME",
}


def cpu_model(cpuinfo: str) -> str:
    """The CPU's marketing name from ``/proc/cpuinfo`` text (empty if it has none)."""
    for key in ("model name", "Model", "Hardware", "cpu model"):
        match = re.search(rf"^{key}\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
        if match:
            return match.group(1).strip()
    return ""


def isa_flags(cpuinfo: str, machine: str = "") -> tuple[str, ...]:
    """ISA extensions that matter to llama.cpp, from ``/proc/cpuinfo`` text.

    Args:
        cpuinfo: the file's text (x86 ``flags`` or Arm ``Features`` lines).
        machine: ``platform.machine()``; Apple Silicon (``arm64``) always has NEON/DOTPROD.
    """
    match = re.search(r"^(?:flags|Features)\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    words = set(match.group(1).split()) if match else set()
    found = [name for flag, name in {**_X86_FLAGS, **_ARM_FLAGS}.items() if flag in words]
    if not found and machine.lower() in {"arm64", "aarch64"} and sys.platform == "darwin":
        found = ["NEON", "DOTPROD", "FP16"]
    return tuple(found)


def numa_nodes(sys_root: Path = Path("/sys")) -> int:
    """NUMA nodes with memory, from sysfs (1 where sysfs says nothing)."""
    text = read_text(sys_root / "devices" / "system" / "node" / "has_memory")
    if not text:
        return 1
    count = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        count += int(hi) - int(lo) + 1 if hi else 1
    return max(1, count)


def _darwin_cpu() -> str:
    try:
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                             text=True, timeout=2, check=False)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _windows_cpu() -> str:
    """The CPU's marketing name from the registry (Windows has no /proc/cpuinfo;
    ``platform.processor()`` says only "Intel64 Family 6 Model 154 ...")."""
    if sys.platform != "win32":
        return ""
    import winreg

    try:
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE,
                            r"HARDWARE\DESCRIPTION\System\CentralProcessor\0") as key:
            value, _kind = winreg.QueryValueEx(key, "ProcessorNameString")
    except OSError:
        return ""
    return str(value).strip()


def clock_ghz(cpuinfo: str, sys_root: Path = Path("/sys")) -> float:
    """The cores' top clock in GHz: cpufreq's maximum, else psutil's, else the highest
    ``cpu MHz`` in /proc/cpuinfo (a VM's nominal clock); 0.0 when nothing says."""
    khz = read_text(sys_root / "devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if khz and khz.strip().isdigit() and int(khz) > 0:
        return round(int(khz) / 1e6, 2)
    try:
        freq = psutil.cpu_freq()
    except (OSError, RuntimeError, NotImplementedError):
        freq = None
    if freq is not None and (freq.max or 0) > 0:
        return round(float(freq.max) / 1000, 2)
    mhz = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([\d.]+)", cpuinfo, re.MULTILINE)]
    if mhz and max(mhz) > 0:
        return round(max(mhz) / 1000, 2)
    if freq is not None and (freq.current or 0) > 0:
        return round(float(freq.current) / 1000, 2)
    return 0.0


def usable_threads() -> int:
    """The logical CPUs this process may run on: its affinity where the OS has one
    (Linux, Windows), else every logical CPU (macOS)."""
    try:
        if sys.platform == "linux":
            return len(os.sched_getaffinity(0)) or 1
        if sys.platform == "win32":
            return len(psutil.Process().cpu_affinity()) or 1
    except (OSError, psutil.Error):
        pass
    return psutil.cpu_count(logical=True) or 1


def probe_host(proc_root: Path = Path("/proc"), sys_root: Path = Path("/sys")) -> Host:
    """The host with RAM as psutil sees it now; bandwidth is a placeholder until measured.

    Threads are the CPUs this process may run on (its affinity), cores the physical ones
    among them (never more than the threads).
    """
    cpuinfo = read_text(proc_root / "cpuinfo") or ""
    name = cpu_model(cpuinfo) or (_darwin_cpu() if sys.platform == "darwin" else "")
    name = name or _windows_cpu()
    name = name or platform.processor() or platform.machine() or "unknown CPU"
    threads = usable_threads()
    cores = min(psutil.cpu_count(logical=False) or threads, threads)
    mem = psutil.virtual_memory()
    return Host(cpu=name, cores=max(1, cores), threads=max(1, threads),
                ram_total_bytes=int(mem.total), ram_available_bytes=int(mem.available),
                bandwidth_gbps=DEFAULT_HOST_BANDWIDTH_GBPS,
                isa=isa_flags(cpuinfo, platform.machine()), numa_nodes=numa_nodes(sys_root),
                measured=("ram_total_bytes", "ram_available_bytes"),
                clock_ghz=clock_ghz(cpuinfo, sys_root))
