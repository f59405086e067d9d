"""ggml's functions are found in whichever library of the engine build exports them.

A Windows build of llama.cpp exports the device API from ``ggml-base.dll`` and only the
registry's few functions from ``ggml.dll``; a DLL, unlike an ELF library, does not lend
its dependencies' symbols. These tests build two real shared libraries that are *not*
linked to each other, the registry in ``libggml`` and the device API in
``libggml-base``, so a lookup in ``libggml`` alone fails exactly as it does on Windows.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.ggml_devices import (
    GgmlExports,
    _enumerate,
    _typed,
    backend_names,
    backend_stems,
    folder_exports,
    library_files,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32" or not shutil.which("cc"),
                                reason="builds ELF/Mach-O libraries with cc")

DEVICE = """
#include <stddef.h>
struct dev { const char *name, *description; size_t free, total; int type; };
"""

# the registry: two devices, as ggml.dll exports them (no device accessors here)
REGISTRY = DEVICE + """
static struct dev devices[2] = {
    {"CPU", "the host", 0, 64ull << 30, 0},
    {"Fake0", "a stand-in GPU", 3ull << 30, 8ull << 30, 1},
};
size_t ggml_backend_dev_count(void) { return 2; }
void *ggml_backend_dev_get(size_t i) { return i < 2 ? &devices[i] : NULL; }
static const char *regs[3] = {"CPU", "Fake", "RPC"};
size_t ggml_backend_reg_count(void) { return 3; }
const char **ggml_backend_reg_get(size_t i) { return &regs[i]; }
"""

# the device API, as ggml-base.dll exports it
BASE = DEVICE + """
const char *ggml_backend_dev_name(struct dev *d) { return d->name; }
const char *ggml_backend_dev_description(struct dev *d) { return d->description; }
void ggml_backend_dev_memory(struct dev *d, size_t *free, size_t *total) {
    *free = d->free; *total = d->total; }
int ggml_backend_dev_type(struct dev *d) { return d->type; }
const char *ggml_backend_reg_name(const char **reg) { return *reg; }
"""

# a backend's own function, in its own library
BACKEND = "int ggml_backend_fake_marker(void) { return 42; }\n"


def _cc(out: Path, source: str) -> None:
    src = out.parent / (out.name.split(".")[0] + ".c")
    src.write_text(source)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)


@pytest.fixture(scope="module")
def lib_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("engine") / "lib"
    folder.mkdir()
    _cc(folder / "libggml.so", REGISTRY)
    _cc(folder / "libggml-base.so", BASE)
    _cc(folder / "libggml-fake.so", BACKEND)
    return folder


def test_the_registry_library_alone_lacks_the_device_functions(lib_folder: Path) -> None:
    # the premise: what engine.ggml_devices did before, and what Windows does
    registry = ctypes.CDLL(str(lib_folder / "libggml.so"))
    assert registry.ggml_backend_dev_count() == 2
    with pytest.raises(AttributeError):
        registry.ggml_backend_dev_name  # noqa: B018


def test_devices_are_listed_from_functions_split_over_two_libraries(lib_folder: Path) -> None:
    devices = _enumerate(_typed(folder_exports(lib_folder)))
    assert [(d.name, d.kind) for d in devices] == [("CPU", "cpu"), ("Fake0", "gpu")]
    gpu = devices[1]
    assert (gpu.description, gpu.free_bytes, gpu.total_bytes) == (
        "a stand-in GPU", 3 << 30, 8 << 30)


def test_the_registered_backends_are_named(lib_folder: Path) -> None:
    assert backend_names(folder_exports(lib_folder)) == ["CPU", "Fake", "RPC"]


def test_a_backends_own_function_is_found_in_its_library(lib_folder: Path) -> None:
    exports = folder_exports(lib_folder)
    assert exports.ggml_backend_fake_marker() == 42
    assert exports.ggml_backend_fake_marker is exports.ggml_backend_fake_marker  # typed once


def test_a_function_no_library_exports_is_named_with_where_it_was_looked_for(
        lib_folder: Path) -> None:
    with pytest.raises(AttributeError, match=r"ggml_nothing.*ggml, ggml-base, ggml-fake"):
        folder_exports(lib_folder).ggml_nothing  # noqa: B018


def test_libraries_load_only_when_a_lookup_needs_them(lib_folder: Path) -> None:
    loaded: list[str] = []

    def load(path: str) -> ctypes.CDLL:
        loaded.append(Path(path).name)
        return ctypes.CDLL(path)

    exports = folder_exports(lib_folder, load)
    exports.ggml_backend_dev_count  # noqa: B018
    assert loaded == ["libggml.so"]
    exports.ggml_backend_dev_name  # noqa: B018
    assert loaded == ["libggml.so", "libggml-base.so"]


def test_file_names_of_every_os_are_recognised(tmp_path: Path) -> None:
    for name in ("ggml.dll", "ggml-base.dll", "ggml-cuda.dll", "libggml-vulkan.dll",
                 "libggml-cpu.so.0", "libggml-cpu.so", "libggml-metal.0.dylib", "llama.dll"):
        (tmp_path / name).write_bytes(b"")
    assert backend_stems(tmp_path) == ["ggml-cpu", "ggml-cuda", "ggml-metal", "ggml-vulkan"]
    assert [p.name for p in library_files(tmp_path, "ggml-base")] == ["ggml-base.dll"]
    assert [p.name for p in library_files(tmp_path, "ggml-cpu")] == [
        "libggml-cpu.so.0", "libggml-cpu.so"]
    with pytest.raises(OSError, match="no ggml library"):
        folder_exports(tmp_path / "empty")


def test_an_empty_exports_says_it_has_no_library() -> None:
    with pytest.raises(AttributeError, match="no library"):
        GgmlExports([]).ggml_backend_dev_count  # noqa: B018
