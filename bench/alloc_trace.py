"""llama.cpp's graph allocator, traced: what ``planner/compute_buffer.py`` replays, seen.

Builds a copy of the engine's ``libggml-base`` whose ``ggml-alloc.c`` prints every
allocation, free and in-place reuse of each compute-buffer reserve (from the engine build
kept in the engine cache, ``~/.cache/loadout-engine/<backend>-*/build``: its compile
command and its other objects; nothing in the cache is changed), runs one
``bench/gpu_memory.py`` case with that library preloaded, and prints per reserve pass and
buffer the high-water mark and the tensors live at it. Run from the repository root::

    .venv/bin/python bench/alloc_trace.py moe/half
    .venv/bin/python bench/alloc_trace.py moe/half --log /tmp/trace.txt   # every line

Each traced line: ``TR ALLOC b<buffer> <op> <tensor> <bytes> @<offset> max <high-water>``,
``TR FREE``, ``TR REUSE b<buffer> <tensor> <- <parent>``, ``TR EXEC`` (each node in the
order the allocator sees it, after the scheduler's splits and the backend's reordering).
Needs a C compiler (``gcc``) and the engine build's objects (a wheel alone is not enough).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE_OBJECTS = ("ggml.c", "ggml.cpp", "ggml-backend.cpp", "ggml-backend-meta.cpp",
                "ggml-opt.cpp", "ggml-threading.cpp", "ggml-quants.c", "gguf.cpp")
# (what ggml-alloc.c says, what the traced copy says instead)
PATCHES = (
    (" " * 24 + '''AT_PRINTF("reusing parent %s for %s\\n", parent->name, node->name);''',
     " " * 24 + '''fprintf(stderr, "TR REUSE b%d %s <- %s %zu @%zu\\n", p_hn->buffer_id,
            node->name, parent->name, ggml_nbytes(node), p_hn->addr.offset);'''),
    ('''        hn->addr = ggml_dyn_tallocr_alloc(alloc, size, node);
    }''',
     '''        hn->addr = ggml_dyn_tallocr_alloc(alloc, size, node);
        fprintf(stderr, "TR ALLOC b%d %s %s %zu @%zu max %zu\\n", buffer_id, ggml_op_desc(node),
            node->name, size, hn->addr.offset, alloc->chunks[hn->addr.chunk]->max_size);
    }'''),
    ('''    ggml_dyn_tallocr_free_bytes(alloc, hn->addr, size);
    hn->allocated = false;''',
     '''    ggml_dyn_tallocr_free_bytes(alloc, hn->addr, size);
    fprintf(stderr, "TR FREE b%d %s %zu @%zu\\n", buffer_id, node->name, size, hn->addr.offset);
    hn->allocated = false;'''),
    ('''        // allocate node
        ggml_gallocr_allocate_node(galloc, node, buffer_id);
''',
     '''        // allocate node
        ggml_gallocr_allocate_node(galloc, node, buffer_id);
        fprintf(stderr, "TR EXEC b%d %s %s\\n", buffer_id, ggml_op_desc(node), node->name);
'''),
    ('''    // allocate in hash table
    ggml_gallocr_alloc_graph_impl(galloc, graph, node_buffer_ids, leaf_buffer_ids);
''',
     '''    // allocate in hash table
    fprintf(stderr, "TR RESERVE nodes %d leafs %d\\n", graph->n_nodes, graph->n_leafs);
    for (int i = 0; i < galloc->n_buffers; i++) {
        fprintf(stderr, "TR BUF b%d %s\\n", i, ggml_backend_buft_name(galloc->bufts[i]));
    }
    ggml_gallocr_alloc_graph_impl(galloc, graph, node_buffer_ids, leaf_buffer_ids);
'''),
)


def engine_build(backend: str) -> Path:
    """The kept build folder of the engine cache for ``backend`` (the newest); the cache
    is where ``packaging/engine_builds.py`` keeps it."""
    cache = Path(os.environ.get("LOADOUT_ENGINE_CACHE", Path.home() / ".cache" / "loadout-engine"))
    builds = sorted(cache.glob(f"{backend}-*/build/compile_commands.json"),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    if not builds:
        raise SystemExit(f"no kept {backend} engine build in {cache}")
    return builds[0].parent


def traced_library(build: Path, folder: Path) -> Path:
    """Compile the traced ggml-alloc.c with the build's own command; link libggml-base."""
    commands = json.loads((build / "compile_commands.json").read_text())
    entry = next(c for c in commands if c["file"].endswith("ggml/src/ggml-alloc.c"))
    source = Path(entry["file"]).read_text()
    for old, new in PATCHES:
        if source.count(old) != 1:
            raise SystemExit("this ggml-alloc.c is not the one the trace was written for")
        source = source.replace(old, new)
    patched, obj = folder / "ggml-alloc.c", folder / "ggml-alloc.c.o"
    patched.write_text(source)
    args = shlex.split(entry["command"])
    args[args.index("-o") + 1] = str(obj)
    args[args.index("-c") + 1] = str(patched)
    args.insert(1, f"-I{Path(entry['file']).parent}")  # its includes, next to the original
    subprocess.run(args, check=True, cwd=entry["directory"])
    objects = build / "vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir"
    lib = folder / "libggml-base.so.0"
    libs = re.findall(r"\S+\.(?:so|a)\b", (build / "build.ninja").read_text().split(
        "build bin/libggml-base.so", 1)[1].split("\n\n", 1)[0])
    subprocess.run(["g++", "-fPIC", "-O2", "-shared", "-Wl,-soname,libggml-base.so.0", "-o",
                    str(lib), *(str(objects / f"{name}.o") for name in BASE_OBJECTS),
                    str(obj), "-lm", *dict.fromkeys(lib for lib in libs
                                                    if lib.startswith("/"))], check=True)
    return lib


def summary(lines: list[str]) -> list[str]:
    """Per reserve pass and buffer: the high-water mark and the tensors live at it."""
    out: list[str] = []
    passes: list[list[str]] = []
    for line in lines:
        if line.startswith("TR RESERVE"):
            passes.append([])
        elif line.startswith("TR ") and passes:
            passes[-1].append(line)
    for n, trace in enumerate(passes, 1):
        names = {p.split()[2]: p.split()[3] for p in trace if p.startswith("TR BUF")}
        for buf, name in names.items():
            live: dict[int, tuple[str, int]] = {}
            peak, at_peak = 0, {}
            for p in trace:
                f = p.split()
                if len(f) < 3 or f[2] != buf:
                    continue
                if f[1] == "ALLOC":
                    live[int(f[-3][1:])] = (" ".join(f[4:-4]), int(f[-4]))
                    if int(f[-1]) > peak:
                        peak, at_peak = int(f[-1]), dict(live)
                elif f[1] == "FREE":
                    live.pop(int(f[-1][1:]), None)
                elif f[1] == "REUSE" and int(f[-1][1:]) in live:
                    live[int(f[-1][1:])] = (f[3], live[int(f[-1][1:])][1])
            out.append(f"pass {n} {name}: {peak / 2**20:.2f} MiB")
            out += [f"    @{off:>10} {size / 2**20:9.3f} MiB  {tensor}"
                    for off, (tensor, size) in sorted(at_peak.items()) if size]
    return out


def main(argv: list[str] | None = None) -> int:
    """Build the traced library, run the case, print the summary (the log with --log)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", help="a bench/gpu_memory.py case, e.g. moe/half")
    parser.add_argument("--backend", default="vulkan")
    parser.add_argument("--log", type=Path, help="write every traced line here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="loadout-alloc-trace-") as tmp:
        lib = traced_library(engine_build(args.backend), Path(tmp))
        env = dict(os.environ, LD_PRELOAD=str(lib), LOADOUT_ENGINE=args.backend)
        env.setdefault("GGML_VK_VISIBLE_DEVICES", "0")
        run = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_memory.py"), "--case",
                              args.case], env=env, capture_output=True, text=True, cwd=ROOT)
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("TR ")]
    if not lines:
        print(run.stdout[-2000:], run.stderr[-2000:], sep="\n", file=sys.stderr)
        return 1
    if args.log:
        args.log.write_text("\n".join(lines) + "\n")
    print("\n".join(summary(lines)))
    print(run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
