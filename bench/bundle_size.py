#!/usr/bin/env python3
"""Size of the frozen bundle, by part: engine builds, Qt, Python, demo model, the rest.

    .venv/bin/python bench/bundle_size.py [dist/loadout] [--json]

Counts the bytes of regular files (symlinks once, as the installer stores them) and the
size of each installer found in ``dist/`` (``*.tar.gz``, ``*-setup.exe``, ``*.dmg``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


def _bytes(paths: list[Path]) -> int:
    return sum(p.lstat().st_size for p in paths if p.is_file() and not p.is_symlink())


def breakdown(bundle: Path) -> dict[str, int]:
    """Bytes per part of the bundle folder (``dist/loadout`` or ``Loadout.app``)."""
    files = [p for p in bundle.rglob("*") if p.is_file() and not p.is_symlink()]
    parts: dict[str, int] = {}
    engines = next((p for p in bundle.rglob("engines") if p.is_dir()), None)
    taken: set[Path] = set()
    if engines is not None:
        for build in sorted(p for p in engines.iterdir() if p.is_dir()):
            inside = [p for p in files if build in p.parents]
            parts[f"engine:{build.name}"] = _bytes(inside)
            taken.update(inside)
    groups = {
        "qt": lambda p: "PySide6" in p.parts or "shiboken6" in p.parts,
        "demo model": lambda p: p.suffix == ".gguf",
        "python": lambda p: p.name.startswith(("libpython", "base_library")) or
        "lib-dynload" in p.parts or "python3" in p.name,
    }
    rest = [p for p in files if p not in taken]
    for name, test in groups.items():
        chosen = [p for p in rest if test(p)]
        parts[name] = _bytes(chosen)
        taken.update(chosen)
        rest = [p for p in rest if p not in taken]
    parts["everything else"] = _bytes(rest)
    parts["total"] = _bytes(files)
    return parts


def main() -> int:
    """Print the size table (or JSON) of a built bundle."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", nargs="?", type=Path, default=ROOT / "dist" / "loadout")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.bundle.is_dir():
        print(f"no bundle at {args.bundle}; build it: python packaging/build.py",
              file=sys.stderr)
        return 1
    parts = breakdown(args.bundle)
    installers = {p.name: p.stat().st_size for pattern in ("*.tar.gz", "*-setup.exe", "*.dmg")
                  for p in sorted(args.bundle.parent.glob(pattern))}
    if args.json:
        print(json.dumps({"schema": "loadout.bundle_size/1", "bundle": str(args.bundle),
                          "parts_bytes": parts, "installers_bytes": installers}, indent=2))
        return 0
    print(f"bundle {args.bundle}")
    for name, size in parts.items():
        print(f"  {name:18} {size / MIB:9.1f} MiB")
    for name, size in installers.items():
        print(f"installer {name}: {size / MIB:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
