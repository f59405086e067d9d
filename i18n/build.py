"""Compile the translations (``i18n/*.ts`` -> ``.qm``), or refresh the sources.

    python i18n/build.py            # compile every .ts next to it (run by dev.py setup)
    python i18n/build.py --update   # re-scan app/ for visible strings into the .ts files

Uses the ``lupdate`` / ``lrelease`` tools that ship inside PySide6.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LANGUAGES = ("zh_CN", "zh_TW")


def ts_path(language: str) -> Path:
    """The translation source of ``language``."""
    return HERE / f"loadout_{language}.ts"


def qm_path(language: str) -> Path:
    """The compiled translation of ``language``."""
    return HERE / f"loadout_{language}.qm"


def qt_tool(name: str) -> Path:
    """Path of a Qt tool (``lupdate``, ``lrelease``) shipped with PySide6."""
    import PySide6

    folder = Path(PySide6.__file__).parent
    for candidate in (folder / name, folder / f"{name}.exe", folder / "Qt" / "bin" / name):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"PySide6 does not ship {name} in {folder}")


def sources() -> list[Path]:
    """Every Python file whose strings are translated (the app package)."""
    return sorted(p for p in (ROOT / "app").rglob("*.py") if "__pycache__" not in p.parts)


def update(ts_files: list[Path] | None = None) -> None:
    """Re-scan the app's sources into the .ts files (existing translations are kept)."""
    targets = ts_files or [ts_path(lang) for lang in LANGUAGES]
    for target in targets:
        language = target.stem.split("_", 1)[1]
        cmd = [str(qt_tool("lupdate")), "-locations", "none", "-no-obsolete", "-silent",
               *(str(p) for p in sources()), "-target-language", language, "-ts", str(target)]
        subprocess.run(cmd, check=True, cwd=ROOT)


def compile_all() -> list[Path]:
    """Compile every .ts to its .qm; return the .qm files written."""
    written = []
    for ts in sorted(HERE.glob("loadout_*.ts")):
        qm = ts.with_suffix(".qm")
        subprocess.run([str(qt_tool("lrelease")), "-silent", str(ts), "-qm", str(qm)],
                       check=True)
        written.append(qm)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="re-scan app/ into the .ts files")
    args = parser.parse_args(argv)
    if args.update:
        update()
    for qm in compile_all():
        print(f"wrote {qm.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
