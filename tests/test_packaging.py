"""Packaging: installer scripts reference real files, icons are valid, engine builds stage
into the layout the runtime selection reads, the Linux install script really installs.

The bundle build itself (PyInstaller, minutes) is ``packaging/build.py``, run apart.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
ICONS = ROOT / "assets" / "installer"
sys.path.insert(0, str(PACKAGING))

import engine_builds  # noqa: E402
import launcher  # noqa: E402

from engine import engine_select  # noqa: E402


def _png_size(blob: bytes) -> tuple[int, int]:
    assert blob[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", blob[16:24])
    return width, height


def test_icon_pngs_have_the_size_in_their_name() -> None:
    for size in (16, 32, 48, 256, 512, 1024):
        assert _png_size((ICONS / f"loadout-{size}.png").read_bytes()) == (size, size)


def test_ico_directory_points_at_pngs_of_the_listed_sizes() -> None:
    data = (ICONS / "loadout.ico").read_bytes()
    reserved, kind, count = struct.unpack("<HHH", data[:6])
    assert (reserved, kind) == (0, 1) and count >= 4
    for i in range(count):
        w, h, _, _, _, _, size, offset = struct.unpack("<BBBBHHII", data[6 + 16 * i:22 + 16 * i])
        assert _png_size(data[offset:offset + size]) == (w or 256, h or 256)


def test_icns_chunks_add_up_and_hold_pngs() -> None:
    data = (ICONS / "loadout.icns").read_bytes()
    assert data[:4] == b"icns" and struct.unpack(">I", data[4:8])[0] == len(data)
    pos, kinds = 8, []
    while pos < len(data):
        kind, length = data[pos:pos + 4], struct.unpack(">I", data[pos + 4:pos + 8])[0]
        _png_size(data[pos + 8:pos + length])
        kinds.append(kind)
        pos += length
    assert pos == len(data) and b"ic10" in kinds and b"ic07" in kinds


def test_spec_names_files_that_exist() -> None:
    spec = (PACKAGING / "loadout.spec").read_text()
    assert '"launcher.py"' in spec and (PACKAGING / "launcher.py").is_file()
    for name in re.findall(r'ICONS / "([^"]+)"', spec):
        assert (ICONS / name).is_file(), name
    assert '"llama_cpp"' in spec.split("excludes=")[1].split("]")[0]  # engines ship apart


def test_inno_setup_script_is_complete() -> None:
    iss = (PACKAGING / "windows" / "loadout.iss").read_text()
    base = PACKAGING / "windows"
    for key in ("SetupIconFile", "LicenseFile"):
        value = re.search(rf"^{key}=(.+)$", iss, re.M)
        assert value, key
        assert (base / value.group(1).strip().replace("\\", "/")).is_file(), key
    icons = iss.split("[Icons]")[1].split("\n[")[0]
    assert '{group}\\Loadout"' in icons and "{uninstallexe}" in icons
    # The executables the shortcuts start are the ones the spec makes on Windows.
    spec = (PACKAGING / "loadout.spec").read_text()
    assert 'name="Loadout"' in spec and "name=CLI" in spec and 'NAME = "loadout"' in spec
    assert 'f"{NAME}-cli"' in spec
    assert "{app}\\Loadout.exe" in icons and "{app}\\loadout-cli.exe" in icons
    assert re.search(r"^AppId=\{\{[0-9A-F-]{36}\}$", iss, re.M)


def test_desktop_entry_is_valid() -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    parser.read(PACKAGING / "linux" / "loadout.desktop", encoding="utf-8")
    entry = parser["Desktop Entry"]
    assert entry["Type"] == "Application" and entry["Name"] == "Loadout"
    assert entry["Icon"] == "loadout" and entry["Terminal"] == "false"
    assert entry["Categories"].endswith(";") and entry["Exec"]


@pytest.mark.parametrize("script", ["linux/install.sh", "linux/uninstall.sh",
                                    "macos/make_dmg.sh"])
def test_shell_scripts_parse(script: str) -> None:
    shell = "bash" if script.startswith("macos") else "sh"
    subprocess.run([shell, "-n", str(PACKAGING / script)], check=True)


def test_linux_install_then_uninstall_keeps_user_data(tmp_path: Path) -> None:
    """install.sh into a temporary HOME: menu entry, icon, command; uninstall removes
    them and leaves the user's models (``~/.local/share/loadout``) alone."""
    release = tmp_path / "release"
    (release / "loadout").mkdir(parents=True)
    exe = release / "loadout" / "loadout"
    exe.write_text("#!/bin/sh\necho bundled loadout \"$@\"\n")
    exe.chmod(0o755)
    for name in ("install.sh", "uninstall.sh", "loadout.desktop"):
        shutil.copy(PACKAGING / "linux" / name, release / name)
    shutil.copy(ICONS / "loadout-256.png", release / "loadout.png")
    shutil.copy(ICONS / "loadout.svg", release / "loadout.svg")
    home = tmp_path / "home"
    models = home / ".local" / "share" / "loadout" / "models"
    models.mkdir(parents=True)
    (models / "mine.gguf").write_text("x")
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    subprocess.run(["sh", str(release / "install.sh")], env=env, check=True,
                   capture_output=True)
    desktop = (home / ".local/share/applications/loadout.desktop").read_text()
    command = re.search(r'^Exec="(.+)"$', desktop, re.M)
    assert command and Path(command.group(1)).is_file()
    assert (home / ".local/share/icons/hicolor/256x256/apps/loadout.png").is_file()
    out = subprocess.run([str(home / ".local/bin/loadout"), "--self-test"], env=env,
                         check=True, capture_output=True, text=True).stdout
    assert out.strip() == "bundled loadout --self-test"
    subprocess.run(["sh", str(release / "uninstall.sh")], env=env, check=True,
                   capture_output=True)
    assert not (home / ".local/share/applications/loadout.desktop").exists()
    assert not (home / ".local/bin/loadout").exists()
    assert not Path(command.group(1)).exists()
    assert (models / "mine.gguf").is_file()


def test_distributed_builds_are_portable_and_rpc_enabled() -> None:
    table = engine_builds.recipes()
    assert set(table) == {"cpu", "cuda", "hip", "vulkan", "metal"}
    for recipe in table.values():
        args = " ".join(recipe.cmake_args)
        assert "-DGGML_RPC=ON" in args and "-DGGML_NATIVE=OFF" in args
        assert "-DGGML_AMX_TILE=ON" not in args and "amx" not in args.replace("AMX", "")
    cuda = " ".join(table["cuda"].cmake_args)
    assert "-DGGML_CUDA=ON" in cuda and "89-real" in cuda and "120-virtual" in cuda
    assert "-DGPU_TARGETS=gfx1030;" in " ".join(table["hip"].cmake_args)
    assert "-DCMAKE_CUDA_ARCHITECTURES=89-real" in engine_builds.recipes("89-real")[
        "cuda"].cmake_args


def test_each_build_has_its_own_cache_folder(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv(engine_builds.CACHE_ENV, str(tmp_path))
    table = engine_builds.recipes()
    folders = {engine_builds.build_folder(r) for r in table.values()}
    assert len(folders) == len(table)
    cuda = table["cuda"]
    assert engine_builds.build_folder(cuda) != engine_builds.build_folder(cuda, ("-DX=1",))
    assert engine_builds.build_folder(cuda).parent == tmp_path


def _fake_wheel(path: Path) -> Path:
    lib = b"\x7fELF" + b"\0" * 64
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("llama_cpp/__init__.py", "__version__ = '0.3.36'\n")
        for name in ("libggml.so", "libggml.so.0", "libggml.so.0.25.3"):
            zf.writestr(f"llama_cpp/lib/{name}", lib)
        zf.writestr("lib/cmake/ggml/ggml-config.cmake", "")
        zf.writestr("llama_cpp_python-0.3.36.dist-info/RECORD", "")
    return path


def test_staged_build_is_found_by_the_runtime_selection(tmp_path: Path) -> None:
    wheel = _fake_wheel(tmp_path / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl")
    recipe = engine_builds.recipes()["cuda"]
    target = engine_builds.stage(wheel, recipe, tmp_path / "engines")
    lib = target / "llama_cpp" / "lib"
    assert not (target / "lib").exists()  # only the package, not the wheel's extras
    if sys.platform != "win32":
        # one real library; its sonames link to it, so it loads once
        assert (lib / "libggml.so.0").readlink() == Path("libggml.so.0.25.3")
        assert (lib / "libggml.so").resolve() == (lib / "libggml.so.0.25.3").resolve()
    builds = engine_select.discover(tmp_path / "engines")
    assert [(b.backend, b.platform) for b in builds] == [("cuda", sys.platform)]
    assert "-DGGML_CUDA=ON" in builds[0].cmake_args


@pytest.mark.skipif(not Path("/usr/local/cuda/include/cuda.h").is_file()
                    or not shutil.which("cc"), reason="needs cuda.h and a C compiler")
def test_driver_link_stub_exports_the_driver_api(tmp_path: Path) -> None:
    stub = engine_builds._driver_stub(Path("/usr/local/cuda"), tmp_path)
    dynamic = subprocess.run(["readelf", "-d", "--dyn-syms", str(stub)], check=True,
                             capture_output=True, text=True).stdout
    assert "Library soname: [libcuda.so.1]" in dynamic
    for symbol in ("cuMemCreate", "cuMemMap", "cuGetErrorString", "cuDeviceGet"):
        assert re.search(rf"\s{symbol}$", dynamic, re.M), symbol


def test_launcher_takes_its_engine_options_out() -> None:
    rest, once, default, listing = launcher.split_engine_args(
        ["--engine", "cpu", "chat", "demo", "--engine-default=vulkan", "--engines", "-p", "x"])
    assert rest == ["chat", "demo", "-p", "x"]
    assert (once, default, listing) == ("cpu", "vulkan", True)
    with pytest.raises(SystemExit):
        launcher.split_engine_args(["--engine"])


def test_launcher_takes_the_interpreter_style_module_arguments_the_app_starts_it_with(
        tmp_path: Path) -> None:
    from app.engine_child import wrapper_arguments
    from app.engine_launch import Binding, serve_arguments

    serve = serve_arguments(tmp_path / "spec.json", "demo", Binding(lan=False), 8080)
    assert serve[:2] == ["-m", "loadout"]  # what the app runs after sys.executable
    assert launcher.split_module_args(serve) == (serve[2:], None)
    wrapper = wrapper_arguments()  # with the lifeline on POSIX, without on Windows
    wrapped = [*wrapper, *serve]
    assert launcher.split_module_args(wrapped) == (serve[2:], wrapper[2:])
    assert launcher.split_module_args(["-m", "app.engine_child", *serve]) == (serve[2:], [])
    plain = ["chat", "demo", "-m", "loadout"]  # only a leading -m is the interpreter's
    assert launcher.split_module_args(plain) == (plain, None)
    for bad in (["-m"], ["-m", "pip", "install"], ["-m", "app.engine_child", "serve"]):
        with pytest.raises(SystemExit, match="cannot run"):
            launcher.split_module_args(bad)


@pytest.mark.skipif(os.name != "posix", reason="the lifeline pipe is passed by number on POSIX")
def test_launcher_runs_the_engine_command_line_the_app_gives_it(tmp_path: Path) -> None:
    # the bundle's executable as the app starts it: wrapper, lifeline, then the command line
    read_end, write_end = os.pipe()
    try:
        args = ["-m", "app.engine_child", "--lifeline", str(read_end),
                "-m", "loadout", "serve", "--help"]
        run = subprocess.run([sys.executable, str(PACKAGING / "launcher.py"), *args],
                             cwd=ROOT, pass_fds=(read_end,), capture_output=True, text=True,
                             timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT),
                                               "LOADOUT_HOME": str(tmp_path)})
    finally:
        os.close(read_end)
        os.close(write_end)
    assert run.returncode == 0, run.stderr
    assert "--launch-spec" in run.stdout and "--ready-json" in run.stdout  # serve's usage
    bad = subprocess.run([sys.executable, str(PACKAGING / "launcher.py"), "-m", "pip"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert bad.returncode != 0 and "cannot run 'pip'" in bad.stderr


def test_launcher_lists_engines_and_remembers_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    engines = tmp_path / "engines"
    engine_builds.stage(_fake_wheel(tmp_path / "w.whl"), engine_builds.recipes()["cpu"],
                        engines)
    monkeypatch.setenv(engine_select.ENGINES_DIR_ENV, str(engines))
    # Activation edits sys.path, sys.modules and these variables: restore them after.
    for name in (engine_select.ENGINE_ENV, engine_select.ACTIVE_ENV, engine_select.REASON_ENV,
                 "LLAMA_CPP_LIB_PATH", "MTMD_CPP_LIB"):
        monkeypatch.setenv(name, "")  # recorded, so undone even if it was unset
        monkeypatch.delenv(name)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    assert launcher.main(["--engine-default", "cpu", "--engines"]) == 0
    out = capsys.readouterr().out
    assert "* cpu" in out and "chosen: cpu" in out
    assert engine_select.load_preference() == "cpu"


@pytest.mark.skipif(sys.platform != "linux" or not shutil.which("cc"),
                    reason="needs Linux, ldd and a C compiler")
def test_runtime_libraries_are_copied_beside_the_engine_with_their_own_needs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A toolkit library the engine needs, and the one that library needs, both land in
    the engine's folder; system libraries (libc) do not."""
    toolkit, lib = tmp_path / "toolkit", tmp_path / "engine" / "lib"
    toolkit.mkdir()
    lib.mkdir(parents=True)

    def cc(out: Path, source: str, *link: str) -> None:
        src = out.with_suffix(".c")
        src.write_text(source)
        subprocess.run(["cc", "-shared", "-fPIC", f"-Wl,-soname,{out.name}", "-o", str(out),
                        str(src), *link], check=True)

    cc(toolkit / "libtkLt.so.13", "int lt(void) { return 1; }\n")
    cc(toolkit / "libtk.so.13", "int lt(void); int tk(void) { return lt(); }\n",
       str(toolkit / "libtkLt.so.13"))
    cc(lib / "libggml-gpu.so", "int tk(void); int run(void) { return tk(); }\n",
       str(toolkit / "libtk.so.13"))
    monkeypatch.setattr(engine_builds, "_runtime_dirs", lambda: [toolkit])
    copied = engine_builds._copy_runtime_libs(lib, ("libtk",))
    assert sorted(copied) == ["libtk.so.13", "libtkLt.so.13"]
    assert sorted(p.name for p in lib.iterdir() if not p.name.endswith(".c")) == [
        "libggml-gpu.so", "libtk.so.13", "libtkLt.so.13"]


def test_the_frozen_launcher_points_the_demo_model_at_its_bundled_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demo_model: Path) -> None:
    """Inside a bundle (``sys._MEIPASS``) the demo model is the copy in ``models/``, and
    ``engine.demo`` finds it there, whatever Python packages are installed."""
    from engine.demo import DEMO_FILE, demo_model_path

    assert launcher.DEMO_FILE == DEMO_FILE == demo_model.name
    (tmp_path / "models").mkdir()
    bundled = tmp_path / "models" / launcher.DEMO_FILE
    bundled.symlink_to(demo_model)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    monkeypatch.setenv("LOADOUT_DEMO_MODEL", "")  # recorded, so undone after the test
    monkeypatch.delenv("LOADOUT_DEMO_MODEL")
    launcher._use_bundled_demo_model()
    assert demo_model_path() == bundled
    monkeypatch.setenv("LOADOUT_DEMO_MODEL", str(demo_model))  # the user's choice wins
    launcher._use_bundled_demo_model()
    assert demo_model_path() == demo_model


_VK_INIT = """    const bool layer_settings = true;
    VkBool32 enable_best_practice = layer_settings;
    std::vector<vk::LayerSettingEXT> settings = {
        { "VK_LAYER_KHRONOS_validation", "validate_best_practices",
          vk::LayerSettingTypeEXT::eBool32, 1, &enable_best_practice },
    };
    vk::LayerSettingsCreateInfoEXT layer_setting_info(settings);
    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, \
layers, extensions, &layer_setting_info);
    vk_instance.instance = vk::createInstance(instance_create_info);
"""


def test_vulkan_layer_settings_block_is_guarded_once_for_old_headers(tmp_path: Path) -> None:
    source = tmp_path / engine_builds.VK_SOURCE
    source.parent.mkdir(parents=True)
    source.write_text(_VK_INIT)
    assert engine_builds.patch_vulkan_layer_settings(tmp_path)
    text = source.read_text()
    guarded = text.split("#if VK_HEADER_VERSION >= 261\n", 1)[1].split("#else\n")
    assert "LayerSettingsCreateInfoEXT" in guarded[0]
    assert "LayerSetting" not in guarded[1].split("#endif")[0]  # old headers: plain info
    assert "&app_info, layers, extensions);" in guarded[1]
    assert text.endswith("vk::createInstance(instance_create_info);\n")
    assert not engine_builds.patch_vulkan_layer_settings(tmp_path)  # already guarded
    assert source.read_text() == text
    source.write_text("int main() {}\n")  # another llama.cpp: say so, never build unpatched
    with pytest.raises(RuntimeError, match="VK_EXT_layer_settings"):
        engine_builds.patch_vulkan_layer_settings(tmp_path)


def test_only_old_vulkan_headers_get_the_patch_and_the_manifest_records_it(
        tmp_path: Path) -> None:
    vulkan, cpu = engine_builds.recipes()["vulkan"], engine_builds.recipes()["cpu"]
    assert engine_builds.source_patches(vulkan, 239)
    assert engine_builds.source_patches(vulkan, 261) == ()
    assert engine_builds.source_patches(vulkan, None) == ()
    assert engine_builds.source_patches(cpu, 239) == ()
    header = tmp_path / "vulkan" / "vulkan_core.h"
    header.parent.mkdir()
    header.write_text("#define VK_HEADER_VERSION 239\n")
    assert engine_builds.vulkan_header_version(tmp_path) == 239
    (tmp_path / "w").mkdir()
    wheel = _fake_wheel(tmp_path / "w" / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl")
    (wheel.parent / "build.json").write_text(json.dumps(
        {"cmake_args": "-DGGML_VULKAN=ON", "patches": ["vulkan-layer-settings-guard"]}))
    target = engine_builds.stage(wheel, vulkan, tmp_path / "engines")
    manifest = json.loads((target / "engine.json").read_text())
    assert manifest["patches"] == ["vulkan-layer-settings-guard"]
    assert manifest["backend"] == "vulkan"


def test_loadout_engine_names_a_build_of_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "w").mkdir()
    wheel = _fake_wheel(tmp_path / "w" / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl")
    engine_builds.stage(wheel, engine_builds.recipes()["vulkan"], tmp_path / "engines")
    for name in ("LOADOUT_ENGINE_ACTIVE", "LOADOUT_ENGINE_REASON", "LLAMA_CPP_LIB_PATH",
                 "MTMD_CPP_LIB"):
        monkeypatch.setenv(name, "")  # restored (or removed) after the test
        monkeypatch.delenv(name)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("LOADOUT_ENGINE", "cpu")
    assert engine_select.activate_requested(tmp_path / "engines") is None
    monkeypatch.setenv("LOADOUT_ENGINE", "cuda")
    with pytest.raises(engine_select.EngineBuildError, match=r"dev\.py setup --engine cuda"):
        engine_select.activate_requested(tmp_path / "engines")
    monkeypatch.setenv("LOADOUT_ENGINE", "vulkan")
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    build = engine_select.activate_requested(tmp_path / "engines")
    assert build is not None and build.backend == "vulkan"
    assert sys.path[0] == str(tmp_path / "engines" / "vulkan")
    assert os.environ["LLAMA_CPP_LIB_PATH"] == str(build.lib_dir)
    assert engine_select.active() == ("vulkan", "user_choice")
