"""Nominal figures of common GPUs: for rig files, what-ifs, and when no probe is possible.

Every figure here is *nominal* (the vendor's data sheet), never measured: memory
bandwidth in GB/s (10^9 bytes/s), dense FP16 throughput in TFLOPS (tensor / matrix units
where the chip has them, FP16 accumulate, no sparsity; the plain FP16 rate otherwise),
and VRAM in bytes (0 for unified-memory chips, whose GPU share depends on the machine).

Multi-die accelerators are listed as software sees them: an MI250 shows up as two devices
of 64 GB each, so its row is one of those devices.

:func:`lookup` finds a row from a driver's device name ("NVIDIA GeForce RTX 4090",
"AMD Radeon RX 7900 XTX", "Apple M2 Max", "NVIDIA A100-SXM4-80GB" ...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.gpu_device import Backend, Gpu, Vendor

GB = 10**9
GIB = 2**30


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model's nominal figures.

    ``key`` is a canonical, space-separated lower-case name ("rtx 4060 ti 16gb");
    ``vram_bytes`` is 0 for unified-memory chips.
    """

    key: str
    name: str
    vendor: Vendor
    vram_bytes: int
    bandwidth_gbps: float
    tflops_fp16: float
    unified_memory: bool = False
    pcie_gbps: float = 32.0

    def to_gpu(self, index: int = 0, total_bytes: int | None = None,
               backend: Backend | None = None) -> Gpu:
        """A :class:`Gpu` with these nominal figures (all memory free), e.g. for a what-if.

        Args:
            index: position of the GPU in the inventory.
            total_bytes: memory to give it; required in effect for unified-memory chips
                (their row has no VRAM size), defaults to the row's VRAM otherwise.
            backend: the engine backend; defaults to the vendor's usual one.
        """
        total = self.vram_bytes if total_bytes is None else total_bytes
        return Gpu(
            index=index, name=self.name, vendor=self.vendor,
            backend=backend or default_backend(self.vendor),
            total_bytes=total, free_bytes=total, bandwidth_gbps=self.bandwidth_gbps,
            pcie_gbps=self.pcie_gbps, tflops_fp16=self.tflops_fp16,
            unified_memory=self.unified_memory, notes=("nominal_figures",),
        )


def default_backend(vendor: Vendor) -> Backend:
    """The engine backend a GPU of this vendor usually runs on."""
    return {Vendor.NVIDIA: Backend.CUDA, Vendor.AMD: Backend.ROCM,
            Vendor.APPLE: Backend.METAL}.get(vendor, Backend.VULKAN)


# PCIe link bandwidth per lane and direction, GB/s, by generation (after line coding).
PCIE_LANE_GBPS: dict[int, float] = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


def pcie_gbps(generation: int, width: int) -> float:
    """Nominal one-direction bandwidth of a PCIe link (0.0 for an unknown generation)."""
    return round(PCIE_LANE_GBPS.get(generation, 0.0) * max(0, width), 2)


_N, _A, _I, _P = Vendor.NVIDIA, Vendor.AMD, Vendor.INTEL, Vendor.APPLE
# key, display name, vendor, VRAM GiB (0: unified), GB/s, FP16 TFLOPS, PCIe GB/s
_ROWS: tuple[tuple[str, str, Vendor, float, float, float, float], ...] = (
    ("rtx 2060", "GeForce RTX 2060", _N, 6, 336, 52, 15.8),
    ("rtx 3060 12gb", "GeForce RTX 3060 12GB", _N, 12, 360, 51, 31.5),
    ("rtx 3060 8gb", "GeForce RTX 3060 8GB", _N, 8, 240, 51, 31.5),
    ("rtx 3060 laptop", "GeForce RTX 3060 Laptop GPU", _N, 6, 336, 44, 31.5),
    ("rtx 3060 ti", "GeForce RTX 3060 Ti", _N, 8, 448, 65, 31.5),
    ("rtx 3070", "GeForce RTX 3070", _N, 8, 448, 81, 31.5),
    ("rtx 3070 ti", "GeForce RTX 3070 Ti", _N, 8, 608, 87, 31.5),
    ("rtx 3080 10gb", "GeForce RTX 3080", _N, 10, 760, 119, 31.5),
    ("rtx 3080 12gb", "GeForce RTX 3080 12GB", _N, 12, 912, 122, 31.5),
    ("rtx 3080 ti", "GeForce RTX 3080 Ti", _N, 12, 912, 136, 31.5),
    ("rtx 3090", "GeForce RTX 3090", _N, 24, 936, 142, 31.5),
    ("rtx 3090 ti", "GeForce RTX 3090 Ti", _N, 24, 1008, 160, 31.5),
    ("rtx 4060", "GeForce RTX 4060", _N, 8, 272, 60, 15.8),
    ("rtx 4060 laptop", "GeForce RTX 4060 Laptop GPU", _N, 8, 256, 60, 15.8),
    ("rtx 4060 ti 8gb", "GeForce RTX 4060 Ti 8GB", _N, 8, 288, 88, 15.8),
    ("rtx 4060 ti 16gb", "GeForce RTX 4060 Ti 16GB", _N, 16, 288, 88, 15.8),
    ("rtx 4070", "GeForce RTX 4070", _N, 12, 504, 117, 31.5),
    ("rtx 4070 laptop", "GeForce RTX 4070 Laptop GPU", _N, 8, 256, 73, 15.8),
    ("rtx 4070 super", "GeForce RTX 4070 SUPER", _N, 12, 504, 142, 31.5),
    ("rtx 4070 ti", "GeForce RTX 4070 Ti", _N, 12, 504, 160, 31.5),
    ("rtx 4070 ti super", "GeForce RTX 4070 Ti SUPER", _N, 16, 672, 177, 31.5),
    ("rtx 4080", "GeForce RTX 4080", _N, 16, 717, 195, 31.5),
    ("rtx 4080 laptop", "GeForce RTX 4080 Laptop GPU", _N, 12, 432, 134, 31.5),
    ("rtx 4080 super", "GeForce RTX 4080 SUPER", _N, 16, 736, 209, 31.5),
    ("rtx 4090", "GeForce RTX 4090", _N, 24, 1008, 330, 31.5),
    ("rtx 4090 laptop", "GeForce RTX 4090 Laptop GPU", _N, 16, 576, 200, 31.5),
    ("rtx 5060 ti 8gb", "GeForce RTX 5060 Ti 8GB", _N, 8, 448, 95, 31.5),
    ("rtx 5060 ti 16gb", "GeForce RTX 5060 Ti 16GB", _N, 16, 448, 95, 31.5),
    ("rtx 5070", "GeForce RTX 5070", _N, 12, 672, 123, 63.0),
    ("rtx 5070 ti", "GeForce RTX 5070 Ti", _N, 16, 896, 176, 63.0),
    ("rtx 5080", "GeForce RTX 5080", _N, 16, 960, 225, 63.0),
    ("rtx 5090", "GeForce RTX 5090", _N, 32, 1792, 419, 63.0),
    ("rtx 5060 laptop", "GeForce RTX 5060 Laptop GPU", _N, 8, 384, 72, 31.5),
    ("rtx 5090 laptop", "GeForce RTX 5090 Laptop GPU", _N, 24, 896, 228, 31.5),
    ("rtx pro 3000 blackwell laptop", "RTX PRO 3000 Blackwell Laptop GPU", _N, 12, 672, 90,
     31.5),
    ("rtx pro 6000 blackwell", "RTX PRO 6000 Blackwell", _N, 96, 1792, 500, 63.0),
    ("v100", "Tesla V100", _N, 32, 900, 125, 15.8),
    ("rtx a4000", "RTX A4000", _N, 16, 448, 77, 31.5),
    ("rtx a5000", "RTX A5000", _N, 24, 768, 111, 31.5),
    ("rtx a6000", "RTX A6000", _N, 48, 768, 155, 31.5),
    ("rtx 6000 ada", "RTX 6000 Ada Generation", _N, 48, 960, 364, 31.5),
    ("l4", "L4", _N, 24, 300, 121, 31.5),
    ("l40", "L40", _N, 48, 864, 181, 31.5),
    ("l40s", "L40S", _N, 48, 864, 362, 31.5),
    ("a100 pcie 40gb", "A100 PCIe 40GB", _N, 40, 1555, 312, 31.5),
    ("a100 pcie 80gb", "A100 PCIe 80GB", _N, 80, 1935, 312, 31.5),
    ("a100 sxm 40gb", "A100 SXM4 40GB", _N, 40, 1555, 312, 31.5),
    ("a100 sxm 80gb", "A100 SXM4 80GB", _N, 80, 2039, 312, 31.5),
    ("h100 pcie", "H100 PCIe", _N, 80, 2000, 756, 63.0),
    ("h100 sxm", "H100 SXM 80GB", _N, 80, 3350, 989, 63.0),
    ("h100 nvl", "H100 NVL", _N, 94, 3900, 835, 63.0),
    ("h200", "H200", _N, 141, 4800, 989, 63.0),
    ("h200 nvl", "H200 NVL", _N, 141, 4800, 835, 63.0),
    ("rx 6800", "Radeon RX 6800", _A, 16, 512, 32, 31.5),
    ("rx 6800 xt", "Radeon RX 6800 XT", _A, 16, 512, 41, 31.5),
    ("rx 6900 xt", "Radeon RX 6900 XT", _A, 16, 512, 46, 31.5),
    ("rx 6950 xt", "Radeon RX 6950 XT", _A, 16, 576, 47, 31.5),
    ("rx 7800 xt", "Radeon RX 7800 XT", _A, 16, 624, 74, 31.5),
    ("rx 7900 gre", "Radeon RX 7900 GRE", _A, 16, 576, 92, 31.5),
    ("rx 7900 xt", "Radeon RX 7900 XT", _A, 20, 800, 103, 31.5),
    ("rx 7900 xtx", "Radeon RX 7900 XTX", _A, 24, 960, 123, 31.5),
    ("ai pro r9700", "Radeon AI PRO R9700", _A, 32, 640, 191, 63.0),
    ("rx 9070 xt", "Radeon RX 9070 XT", _A, 16, 640, 195, 63.0),
    ("mi210", "Instinct MI210", _A, 64, 1638, 181, 63.0),
    ("mi250", "Instinct MI250 (one GCD)", _A, 64, 1638, 181, 63.0),
    ("mi250x", "Instinct MI250X (one GCD)", _A, 64, 1638, 192, 63.0),
    ("mi300x", "Instinct MI300X", _A, 192, 5300, 1307, 63.0),
    ("strix halo", "Radeon 8060S (Strix Halo)", _A, 0, 256, 59, 0.0),
    ("arc a770", "Arc A770", _I, 16, 560, 138, 31.5),
    ("arc b580", "Arc B580", _I, 12, 456, 117, 15.8),
    ("m1", "Apple M1", _P, 0, 68, 2.6, 0.0),
    ("m1 pro", "Apple M1 Pro", _P, 0, 200, 5.2, 0.0),
    ("m1 max", "Apple M1 Max", _P, 0, 400, 10.4, 0.0),
    ("m1 ultra", "Apple M1 Ultra", _P, 0, 800, 21, 0.0),
    ("m2", "Apple M2", _P, 0, 100, 3.6, 0.0),
    ("m2 pro", "Apple M2 Pro", _P, 0, 200, 6.8, 0.0),
    ("m2 max", "Apple M2 Max", _P, 0, 400, 13.6, 0.0),
    ("m2 ultra", "Apple M2 Ultra", _P, 0, 800, 27.2, 0.0),
    ("m3", "Apple M3", _P, 0, 100, 4.1, 0.0),
    ("m3 pro", "Apple M3 Pro", _P, 0, 150, 7.4, 0.0),
    ("m3 max", "Apple M3 Max", _P, 0, 400, 16.4, 0.0),
    ("m3 ultra", "Apple M3 Ultra", _P, 0, 819, 28, 0.0),
    ("m4", "Apple M4", _P, 0, 120, 4.3, 0.0),
    ("m4 pro", "Apple M4 Pro", _P, 0, 273, 9.2, 0.0),
    ("m4 max", "Apple M4 Max", _P, 0, 546, 18.4, 0.0),
)

GPU_TABLE: tuple[GpuSpec, ...] = tuple(
    GpuSpec(key=k, name=n, vendor=v, vram_bytes=int(g * GIB), bandwidth_gbps=float(bw),
            tflops_fp16=float(tf), unified_memory=g == 0, pcie_gbps=float(pc))
    for k, n, v, g, bw, tf, pc in _ROWS
)

# Words of a device name that say nothing about which model it is.
_NOISE = frozenset({
    "nvidia", "geforce", "amd", "ati", "radeon", "instinct", "intel", "tm", "apple",
    "graphics", "gpu", "corporation", "inc", "w", "oam", "hbm2", "hbm2e", "hbm3", "hbm3e",
    "gddr6", "gddr6x", "gddr7", "generation",
})
# Family words a user may leave out ("4090" is an "RTX 4090").
_OPTIONAL = frozenset({"rtx", "rx", "arc", "gtx"})
# Words that name a different model when present: a name carrying one only matches a
# row carrying it too ("RTX 4070 Ti" is not an "RTX 4070"; "M2 Max" is not an "M2").
_QUALIFIERS = frozenset({"ti", "super", "xt", "xtx", "gre", "laptop", "max", "pro", "ultra",
                         "nvl", "sxm", "pcie", "ada"})
# Synonyms and marketing names folded before matching (on the lower-cased name).
_ALIASES: tuple[tuple[str, str], ...] = (
    (r"\(tm\)|\(r\)|\+", " "),
    (r"\bsxm[0-9]?\b", "sxm"),
    (r"\bmobile\b", "laptop"),
    (r"\bh100 80gb hbm3\b", "h100 sxm 80gb"),
    (r"\bryzen ai max( pro)?\b", "strix halo"),
    (r"\b80[56]0s\b", "strix halo"),
    (r"\bmi250x\s*/\s*mi250\b", "mi250x"),
)


def _words(name: str) -> list[str]:
    text = name.lower()
    for pattern, repl in _ALIASES:
        text = re.sub(pattern, repl, text)
    return [t for t in re.split(r"[^a-z0-9]+", text) if t and t not in _NOISE]


def _size_gib(token: str) -> int | None:
    match = re.fullmatch(r"(\d+)gb?", token)
    return int(match.group(1)) if match else None


def lookup(name: str, total_bytes: int | None = None) -> GpuSpec | None:
    """The table row for a device name, or ``None`` when no row matches.

    Matching ignores vendor words, case and punctuation. Every word of the row must
    appear in the name ("RTX"/"RX"/"Arc" may be left out), qualifiers ("Ti", "XTX",
    "Laptop", "Max", "SXM", ...) must agree both ways, and among rows that differ only by
    memory size the one closest to a size written in the name ("80GB") or to
    ``total_bytes`` wins.

    Args:
        name: a device name as a driver or the user writes it.
        total_bytes: the device's memory, when known, to tell 8 GB from 16 GB variants.
    """
    tokens = _words(name)
    sizes = [s for s in map(_size_gib, tokens) if s is not None]
    words = {t for t in tokens if _size_gib(t) is None}
    size = sizes[0] if sizes else (round(total_bytes / GIB) if total_bytes else None)
    qualifiers = words & _QUALIFIERS
    best: tuple[int, float, GpuSpec] | None = None
    for spec in GPU_TABLE:
        need = {t for t in spec.key.split() if _size_gib(t) is None}
        if not need - _OPTIONAL <= words or (need & _QUALIFIERS) != qualifiers:
            continue
        distance = abs(spec.vram_bytes / GIB - size) if size and spec.vram_bytes else 0.0
        if best is None or (len(need & words), -distance) > (best[0], best[1]):
            best = (len(need & words), -distance, spec)
    return best[2] if best else None


def nominal_gpu(name: str, index: int = 0, total_bytes: int | None = None) -> Gpu | None:
    """A :class:`Gpu` with the table's nominal figures for ``name`` (``None`` if unknown).

    Convenient for rig files and what-ifs ("add an RTX 3090").
    """
    spec = lookup(name, total_bytes)
    return spec.to_gpu(index=index, total_bytes=total_bytes) if spec else None


def complete_rig_gpu(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A rig file's GPU entry with the figures it leaves out filled from the table.

    A hand-written entry may give only ``name`` and ``total_bytes``; the table then
    supplies ``bandwidth_gbps``, ``tflops_fp16``, ``pcie_gbps``, ``vendor``, ``backend``
    and ``unified_memory``, and the note ``nominal_figures`` is added. Figures the entry
    gives are kept. An entry whose name matches no row comes back unchanged (a copy).
    """
    out = dict(doc)
    name = doc.get("name")
    total = doc.get("total_bytes")
    size = total if isinstance(total, int) and not isinstance(total, bool) else None
    spec = lookup(name, size) if isinstance(name, str) else None
    if spec is None:
        return out
    vendor = doc.get("vendor", spec.vendor.value)
    filled = {"bandwidth_gbps": spec.bandwidth_gbps, "tflops_fp16": spec.tflops_fp16,
              "pcie_gbps": spec.pcie_gbps, "vendor": spec.vendor.value,
              "unified_memory": spec.unified_memory}
    if vendor in {v.value for v in Vendor}:
        filled["backend"] = default_backend(Vendor(vendor)).value
    missing = {k: v for k, v in filled.items() if k not in doc}
    if any(k in missing for k in ("bandwidth_gbps", "tflops_fp16", "pcie_gbps")):
        notes = [str(n) for n in doc.get("notes", ()) if isinstance(n, str)]
        out["notes"] = [*notes, *(["nominal_figures"] if "nominal_figures" not in notes
                                  else [])]
    out.update(missing)
    return out
