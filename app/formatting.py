"""Numbers as people read them: bytes in GiB/MiB, speeds with their names."""

from __future__ import annotations

GIB = 1 << 30
MIB = 1 << 20


def fmt_bytes(n: int) -> str:
    """``12.0 GiB``, ``512 MiB``, ``0 B``."""
    if abs(n) >= GIB:
        return f"{n / GIB:.1f} GiB"
    if abs(n) >= MIB:
        return f"{n / MIB:.0f} MiB"
    if abs(n) >= 1024:
        return f"{n / 1024:.0f} KiB"
    return f"{n} B"


def fmt_gbps(value: float) -> str:
    """A bandwidth: ``936 GB/s``, ``3.5 GB/s``."""
    return f"{value:.0f} GB/s" if value >= 100 else f"{value:.1f} GB/s"


def fmt_tps(value: float) -> str:
    """A rate in tokens per second, without its name (the caller says which)."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_seconds(value: float) -> str:
    """``120 ms`` below a second, ``2.4 s`` above."""
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def fmt_tokens(n: int) -> str:
    """A token count: ``32K`` for powers of two of 1024, else the plain number."""
    if n >= 1024 * 1024 and n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)}M"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    return str(n)
