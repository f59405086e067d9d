"""The Windows installer's build pieces that run without wine: the mingw-w64 cross build's
toolchain file and compatibility header, the engine wheel and its staging, the pins, the
embeddable Python's path file, and the test step's idea of what the installer installs.

The build itself (wine, PyInstaller, Inno Setup; tens of minutes) is
``python3 packaging/build.py --target windows``, run apart (see packaging/README.md).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
sys.path.insert(0, str(PACKAGING))

import engine_builds  # noqa: E402
import windows_build  # noqa: E402
import windows_engine  # noqa: E402
import windows_test  # noqa: E402
from wine import windows_path  # noqa: E402

MINGW_CC = shutil.which(windows_engine.CC)
MINGW_CXX = shutil.which(windows_engine.CXX)
needs_mingw = pytest.mark.skipif(not (MINGW_CC and MINGW_CXX),
                                 reason="g++-mingw-w64-x86-64-posix is not installed")


def test_toolchain_file_targets_64_bit_windows_with_the_posix_thread_compilers() -> None:
    text = windows_engine.TOOLCHAIN.read_text()
    settings = dict(re.findall(r"^set\((\w+) (\S+)\)$", text, re.M))
    assert settings["CMAKE_SYSTEM_NAME"] == "Windows"
    assert settings["CMAKE_SYSTEM_PROCESSOR"] == "x86_64"  # ggml's x86 variants
    prefix = settings["TOOLCHAIN_PREFIX"]
    assert settings["CMAKE_C_COMPILER"] == "${TOOLCHAIN_PREFIX}-gcc-posix"
    assert settings["CMAKE_CXX_COMPILER"] == "${TOOLCHAIN_PREFIX}-g++-posix"
    assert f"{prefix}-gcc-posix" == windows_engine.CC
    assert settings["CMAKE_FIND_ROOT_PATH_MODE_LIBRARY"] == "ONLY"


def test_cross_build_uses_the_distributed_cpu_recipe_and_force_includes_the_header(
        tmp_path: Path) -> None:
    recipe = engine_builds.recipes()["cpu"]
    args = windows_engine.cmake_args(recipe, tmp_path)
    assert f"-DCMAKE_TOOLCHAIN_FILE={windows_engine.TOOLCHAIN}" in args
    assert f"-DCMAKE_C_FLAGS=-include {windows_engine.COMPAT_HEADER}" in args
    assert f"-DSKBUILD_PLATLIB_DIR={tmp_path}" in args
    for arg in recipe.cmake_args:  # portable baseline, RPC, no AVX-512 / AMX
        assert arg in args
    assert "-DGGML_NATIVE=OFF" in args and "-DGGML_AMX_TILE=OFF" in args


def test_cache_folder_changes_with_the_toolchain_and_the_compiler(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(engine_builds.CACHE_ENV, str(tmp_path))
    recipe = engine_builds.recipes()["cpu"]
    one = windows_engine.build_folder(recipe, "gcc 12-posix")
    assert one.parent == tmp_path and one.name.startswith("cpu-win_amd64-")
    assert one == windows_engine.build_folder(recipe, "gcc 12-posix")
    assert one != windows_engine.build_folder(recipe, "gcc 13-posix")
    linux = engine_builds.build_folder(recipe)
    assert one != linux  # a Windows build is never taken for the Linux one


THROTTLING_PROBE = """
#include <windows.h>
int probe(void) {
    THREAD_POWER_THROTTLING_STATE t;
    ZeroMemory(&t, sizeof(t));
    t.Version = THREAD_POWER_THROTTLING_CURRENT_VERSION;
    t.ControlMask = THREAD_POWER_THROTTLING_EXECUTION_SPEED;
    return SetThreadInformation(GetCurrentThread(), ThreadPowerThrottling, &t, sizeof(t));
}
"""


@needs_mingw
def test_compat_header_gives_mingw_the_thread_power_throttling_state(tmp_path: Path) -> None:
    """ggml-cpu.c's use of THREAD_POWER_THROTTLING_STATE compiles with the header."""
    source = tmp_path / "probe.c"
    source.write_text(THROTTLING_PROBE)
    out = tmp_path / "probe.o"
    cmd = [str(MINGW_CC), "-D_WIN32_WINNT=0x0A00", "-c", str(source), "-o", str(out)]
    forced = subprocess.run([*cmd[:1], "-include", str(windows_engine.COMPAT_HEADER),
                             *cmd[1:]], capture_output=True, text=True)
    assert forced.returncode == 0, forced.stderr
    # the layout is the Windows SDK's: three ULONGs
    size = tmp_path / "size.c"
    size.write_text("_Static_assert(sizeof(THREAD_POWER_THROTTLING_STATE) == 12, \"size\");\n")
    checked = subprocess.run([str(MINGW_CC), "-include", str(windows_engine.COMPAT_HEADER),
                              "-c", str(size), "-o", str(tmp_path / "size.o")],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


@needs_mingw
def test_runtime_dlls_a_cross_built_library_imports_are_bundled(tmp_path: Path) -> None:
    """A C++ DLL built with the posix mingw compiler imports libstdc++ and friends;
    bundle_runtime copies them (and what they import) beside it, and nothing else."""
    lib = tmp_path / "lib"
    lib.mkdir()
    source = tmp_path / "engine.cpp"
    source.write_text('#include <string>\n#include <thread>\n'
                      'extern "C" __declspec(dllexport) int run(const char* s) {\n'
                      '  std::string t(s); std::thread th([&]{ t += "!"; }); th.join();\n'
                      '  return (int)t.size(); }\n')
    subprocess.run([str(MINGW_CXX), "-shared", "-o", str(lib / "engine.dll"), str(source)],
                   check=True, capture_output=True)
    copied = windows_engine.bundle_runtime(lib)
    assert "libstdc++-6.dll" in copied and "libgcc_s_seh-1.dll" in copied
    assert "libwinpthread-1.dll" in copied  # std::thread, the posix thread model
    assert sorted(p.name for p in lib.glob("*.dll")) == sorted(["engine.dll", *copied])
    for dll in lib.glob("*.dll"):  # everything left to import is Windows' own
        for name in windows_engine.dll_imports(dll):
            assert (lib / name).is_file() or name.lower() in windows_engine.SYSTEM_DLLS \
                or name.lower().startswith("api-ms-win-"), (dll.name, name)


def _fake_build(tmp_path: Path) -> tuple[Path, Path]:
    source = tmp_path / "src"
    (source / "llama_cpp" / "server").mkdir(parents=True)
    (source / "llama_cpp" / "__init__.py").write_text('__version__ = "0.3.36"\n')
    (source / "llama_cpp" / "server" / "app.py").write_text("# server\n")
    (source / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: llama_cpp_python\n"
                                     "Version: 0.3.36\nRequires-Dist: numpy>=1.20.0\n")
    lib = tmp_path / "platlib" / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    for name in ("llama.dll", "ggml.dll", "ggml-base.dll", "libgomp-1.dll"):
        (lib / name).write_bytes(b"MZ" + name.encode() * 50)
    return source, lib


def test_engine_wheel_is_a_valid_win_amd64_wheel_with_the_dlls(tmp_path: Path) -> None:
    source, lib = _fake_build(tmp_path)
    wheel = windows_engine.make_wheel(source, lib, tmp_path)
    assert wheel.name == "llama_cpp_python-0.3.36-py3-none-win_amd64.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        info = "llama_cpp_python-0.3.36.dist-info"
        assert {"llama_cpp/__init__.py", "llama_cpp/server/app.py",
                "llama_cpp/lib/ggml-base.dll", "llama_cpp/lib/libgomp-1.dll",
                f"{info}/METADATA", f"{info}/WHEEL", f"{info}/RECORD"} <= names
        assert "Tag: py3-none-win_amd64" in zf.read(f"{info}/WHEEL").decode()
        assert "Root-Is-Purelib: false" in zf.read(f"{info}/WHEEL").decode()
        rows = list(csv.reader(io.StringIO(zf.read(f"{info}/RECORD").decode())))
        assert {r[0] for r in rows} == names
        for name, digest, size in rows:
            if name.endswith("RECORD"):
                continue
            data = zf.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == f"sha256={want.decode()}" and int(size) == len(data)


def test_windows_engine_stages_with_its_dlls_untouched_and_a_win32_manifest(
        tmp_path: Path) -> None:
    source, lib = _fake_build(tmp_path)
    wheel = windows_engine.make_wheel(source, lib, tmp_path)
    bundle = tmp_path / "bundle"
    target = windows_build.stage_engine(wheel, bundle)
    assert target == bundle / "_internal" / "engines" / "cpu"
    staged = target / "llama_cpp" / "lib"
    for dll in lib.iterdir():
        assert (staged / dll.name).read_bytes() == dll.read_bytes()
        assert not (staged / dll.name).is_symlink()
    manifest = json.loads((target / engine_builds.MANIFEST).read_text())
    assert manifest["platform"] == "win32" and manifest["machine"] == "AMD64"
    assert manifest["backend"] == "cpu" and "-DGGML_RPC=ON" in manifest["cmake_args"]


def test_embeddable_python_path_file_turns_site_on_and_adds_site_packages() -> None:
    original = "python311.zip\n.\n\n# Uncomment to run site.main() automatically\n#import site\n"
    text = windows_build.pth_text(original)
    assert text.splitlines() == ["python311.zip", ".", "Lib\\site-packages", "import site"]
    assert windows_build.pth_text(text) == text


def test_windows_pins_are_within_the_projects_own_ranges() -> None:
    """What the installer ships (the pins wine 8.0 runs) is what pyproject allows."""
    wanted = {Requirement(r).name.lower(): Requirement(r)
              for r in windows_build.requirements()}
    assert "pyinstaller" in wanted and "llama-cpp-python" in wanted
    pins = {}
    for line in windows_build.CONSTRAINTS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            req = Requirement(line)
            pins[req.name.lower()] = next(iter(req.specifier)).version
    assert pins["numpy"] == "1.26.4" and pins["pyside6-essentials"] == "6.9.3"
    for name, version in pins.items():
        if name in wanted:
            assert wanted[name].specifier.contains(version), (name, version)


def test_checkout_is_put_on_the_embeddable_pythons_path(tmp_path: Path) -> None:
    """The spec's collect_submodules runs in a child of the prefix's Python, which ignores
    PYTHONPATH: a .pth file in its site-packages is what makes the project importable."""
    exe = tmp_path / "python311" / "python.exe"
    (exe.parent / "Lib" / "site-packages").mkdir(parents=True)
    pth = windows_build.link_checkout(exe)
    assert pth.parent == exe.parent / "Lib" / "site-packages" and pth.suffix == ".pth"
    assert pth.read_text().strip() == windows_path(ROOT)
    assert (ROOT / "loadout" / "cli.py").is_file()  # what that path makes importable


def test_wine_paths_are_the_z_drive() -> None:
    assert windows_path("/work/dist/setup.exe") == "Z:\\work\\dist\\setup.exe"


def test_the_install_test_looks_where_the_inno_setup_script_installs() -> None:
    iss = windows_build.ISS.read_text()
    app_id = re.search(r"^AppId=\{(\{[0-9A-F-]{36}\})$", iss, re.M)
    assert app_id and windows_test.UNINSTALL_KEY.endswith(f"\\{app_id.group(1)}_is1")
    assert re.search(r"^DefaultDirName=\{autopf\}\\Loadout$", iss, re.M)
    assert windows_test.APP_DIR == "Program Files/Loadout"  # {autopf}, all users
    assert "PrivilegesRequiredOverridesAllowed=dialog" in iss  # /ALLUSERS is allowed
    assert re.search(r"^DefaultGroupName=Loadout$", iss, re.M)
    icons = re.findall(r'^Name: "\{group\}\\([^"]+)"', iss, re.M)
    assert sorted(icons) == ["Loadout", "Loadout self-test", "Uninstall Loadout"]
