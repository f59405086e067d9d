#!/usr/bin/env bash
# Loadout on a real NVIDIA GPU, offline, in one command.
#
#   bench/gpu_check.sh prepare       # here, with the package registry: makes build/gpu-kit/
#   bench/gpu_check.sh               # on the GPU machine (no network): build, check, compare
#
# prepare: fetches the llama-cpp-python 0.3.36 sdist with pip, drops what a build does not
#   need (vendor/llama.cpp/{models,docs,tests,benches} and the sdist's .git) into
#   build/gpu-kit/llama_cpp_python-0.3.36-trimmed.tar.gz (~12 MB; 61 MB unpacked), and
#   puts beside it the wheels of the few pure or small packages Loadout's checks need that a
#   CUDA + torch machine may lack (psutil, diskcache, gguf, nvidia-ml-py, platformdirs,
#   pyyaml; CPython 3.12, manylinux x86-64). Repository plus kit stay under 64 MiB.
#
# run (the GPU machine: Python 3.12 with torch, cmake, ninja, nvcc, scikit-build-core):
#   1. builds the CUDA engine (-DGGML_CUDA=ON -DGGML_RPC=ON, this GPU's architecture only)
#      from the trimmed sdist with pip --no-build-isolation, and llama.cpp's llama-bench and
#      llama-fit-params from the same build folder;
#   2. bench/gpu_memory.py on it: the plan's bytes per device against the CUDA and host
#      buffers llama.cpp allocates, and every layer / expert / KV where the plan put it;
#   3. llama.cpp's dry run (engine/dry_run.py) of an 8B-shaped plan: confirmed or corrected;
#   4. placement against llama.cpp's --fit: a synthetic Q4_K model of ~18 GiB; for each cap
#      (8, 12, 16, 24 GiB left free, the rest held by a torch allocation so that both see
#      the same free memory) Loadout plans it and llama-fit-params fits it, llama-bench
#      measures decode for both, and the ratio Loadout / --fit is printed per cap.
# Everything goes to $LOADOUT_GPU_CHECK_DIR (default /tmp/loadout-gpu-check); the report is
# report.txt there. Budget: under 9 minutes on 16 cores (the CUDA build is most of it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIT="${LOADOUT_GPU_KIT:-$ROOT/build/gpu-kit}"
WORK="${LOADOUT_GPU_CHECK_DIR:-/tmp/loadout-gpu-check}"
VERSION="0.3.36"
SDIST="llama_cpp_python-$VERSION"
TARBALL="$KIT/$SDIST-trimmed.tar.gz"
CAPS_GIB="${LOADOUT_GPU_CAPS:-8 12 16 24}"
JOBS="${JOBS:-$(nproc)}"
PY="${PYTHON:-python3}"

say() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }
die() { printf 'gpu_check: %s\n' "$*" >&2; exit 1; }

trim_sdist() {  # trim_sdist SDIST_TAR_GZ OUT_TAR_GZ
    local src="$1" out="$2" tmp
    tmp="$(mktemp -d)"
    tar xzf "$src" -C "$tmp"
    rm -rf "$tmp/$SDIST/.git" "$tmp/$SDIST/vendor/llama.cpp/"{models,docs,tests,benches}
    local kib
    kib="$(du -sk "$tmp/$SDIST" | cut -f1)"
    [ "$kib" -le $((64 * 1024)) ] || die "the trimmed tree is $((kib / 1024)) MiB (> 64 MiB)"
    tar czf "$out" -C "$tmp" "$SDIST"
    rm -rf "$tmp"
    echo "$out: $(du -h "$out" | cut -f1) ($((kib / 1024)) MiB unpacked)"
}

prepare() {
    mkdir -p "$KIT/wheels"
    local dl
    dl="$(mktemp -d)"
    "$PY" -m pip download -q --no-deps --no-binary :all: -d "$dl" "llama-cpp-python==$VERSION"
    trim_sdist "$dl/$SDIST.tar.gz" "$TARBALL"
    rm -rf "$dl"
    "$PY" -m pip download -q --only-binary :all: --python-version 3.12 \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
        --implementation cp --no-deps -d "$KIT/wheels" psutil diskcache gguf nvidia-ml-py \
        platformdirs pyyaml
    ls -la "$KIT" "$KIT/wheels"
    echo "copy the repository (with build/gpu-kit) to the GPU machine, then run bench/gpu_check.sh"
}

preflight() {
    command -v nvidia-smi >/dev/null || die "nvidia-smi not found: no NVIDIA driver here"
    command -v nvcc >/dev/null || die "nvcc not found (the CUDA toolkit is needed)"
    command -v cmake >/dev/null && command -v ninja >/dev/null || die "cmake and ninja are needed"
    [ -f "$TARBALL" ] || die "no $TARBALL: run 'bench/gpu_check.sh prepare' where pip can download"
    "$PY" - <<'EOF' || die "Python 3.12 with torch (CUDA), numpy, jinja2 and scikit-build-core is needed"
import importlib, sys
missing = [m for m in ("torch", "numpy", "jinja2", "scikit_build_core")
           if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"missing: {', '.join(missing)}")
import torch
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, "
      f"{torch.cuda.get_device_name(0)}")
EOF
    nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv
}

setup_python() {
    # No virtual environment (python3-venv may be missing): the few packages this needs go
    # to $WORK/site, first on PYTHONPATH, beside the system's torch, numpy and jinja2.
    VPY="$PY"
    SITE="$WORK/site"
    mkdir -p "$SITE"
    export PYTHONPATH="$SITE:$ROOT"
    local need=()
    for pair in psutil:psutil diskcache:diskcache gguf:gguf pynvml:nvidia-ml-py \
                platformdirs:platformdirs yaml:pyyaml; do
        "$VPY" -c "import ${pair%%:*}" 2>/dev/null || need+=("${pair##*:}")
    done
    if [ "${#need[@]}" -gt 0 ]; then
        "$VPY" -m pip install -q --no-index --no-deps --target "$SITE" \
            --find-links "$KIT/wheels" "${need[@]}"
    fi
}

build_engine() {
    local src="$WORK/src/$SDIST" build="$WORK/build" wheels="$WORK/wheels"
    if ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1 && [ -x "$build/bin/llama-bench" ]; then
        echo "engine already built in $WORK"
    else
        rm -rf "$WORK/src" && mkdir -p "$WORK/src" "$wheels"
        tar xzf "$TARBALL" -C "$WORK/src"
        # LLAVA_BUILD=OFF: no multimodal library (not needed here), and llama.cpp's tools
        # can then be configured in the same folder (both would add tools/mtmd)
        CMAKE_ARGS="-DGGML_CUDA=ON -DGGML_RPC=ON -DCMAKE_CUDA_ARCHITECTURES=native -DGGML_NATIVE=ON -DLLAVA_BUILD=OFF" \
        CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" \
            "$VPY" -m pip wheel --no-build-isolation --no-deps --no-index \
            --config-settings=build-dir="$build" -w "$wheels" "$src" > "$WORK/build.log" 2>&1 \
            || { tail -40 "$WORK/build.log"; die "the CUDA engine build failed ($WORK/build.log)"; }
        # llama.cpp's own tools from the same build folder: only they are compiled now
        cmake -DLLAMA_BUILD_TOOLS=ON "$build" >> "$WORK/build.log" 2>&1
        cmake --build "$build" -j "$JOBS" --target llama-bench llama-fit-params \
            >> "$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; die "llama-bench build failed"; }
    fi
    rm -rf "$SITE/llama_cpp"
    "$VPY" -m pip install -q --no-deps --no-index --upgrade --target "$SITE" \
        "$wheels"/llama_cpp_python-*.whl
    BENCH="$(find "$build" -name llama-bench -type f -perm -u+x | head -1)"
    FIT="$(find "$build" -name llama-fit-params -type f -perm -u+x | head -1)"
    [ -n "$BENCH" ] && [ -n "$FIT" ] || die "llama-bench / llama-fit-params not found in $build"
    export LD_LIBRARY_PATH="$(dirname "$BENCH"):$(dirname "$(find "$build" -name 'libggml-cuda.so*' | head -1)"):${LD_LIBRARY_PATH:-}"
}

memory_checks() {
    # LOADOUT_ENGINE=installed: the CUDA wheel in this venv is the engine
    LOADOUT_ENGINE=installed "$VPY" "$ROOT/bench/gpu_memory.py" \
        || echo "memory/placement goal missed (table above)"
    LOADOUT_ENGINE=installed "$VPY" - <<'EOF' || echo "dry run failed"
import tempfile
from pathlib import Path
from engine.gguf_file import load_profile
from engine.hardware import detect
from engine import dry_run
from planner.plan import plan
from planner.request import Request
from tests.helpers.gguf_factory import Shape, write_llama
path = str(write_llama(Path(tempfile.mkdtemp()) / "dense.gguf", Shape(
    n_layers=32, n_embd=4096, n_head=32, n_head_kv=8, head_dim=128, n_ff=14336,
    n_vocab=32000, n_ctx_train=32768, weight_type="Q4_K"), header_only=True))
inventory, request = detect(measure=False), Request(context=8192, advise=False)
checked, check = dry_run.confirm(path, inventory, request,
                                 plan(inventory, load_profile(path), request))
print("dry run:", None if check is None else check.to_json())
EOF
}

tg_of() {  # llama-bench -o json on stdin -> the decode tokens/s
    "$VPY" -c "import json,sys; r=json.load(sys.stdin); print(f\"{r[-1]['avg_ts']:.2f}\")" \
        2>/dev/null || echo ""
}

fit_compare() {
    local model="$WORK/dense-q4k.gguf"
    LOADOUT_ENGINE=installed "$VPY" - "$model" <<'EOF'
import sys
from pathlib import Path
from tests.helpers.gguf_factory import Shape, write_llama
path = Path(sys.argv[1])
if not path.exists():  # ~18 GiB apparent, sparse: the weights read as zeros
    write_llama(path, Shape(n_layers=64, n_embd=5120, n_head=40, n_head_kv=8, head_dim=128,
                            n_ff=25600, n_vocab=152064, n_ctx_train=32768,
                            weight_type="Q4_K"), header_only=True)
print(path, path.stat().st_size / 2**30, "GiB")
EOF
    printf '%-8s %-44s %-44s %9s %9s %7s\n' "free GiB" "loadout" "--fit" "tg loadout" "tg fit" "ratio"
    for cap in $CAPS_GIB; do
        # hold all but $cap GiB of the GPU with torch, so both planners see the same free memory
        coproc HOLD { "$VPY" -c "
import sys, torch
free, _ = torch.cuda.mem_get_info(0)
keep = int($cap * 2**30)
held = torch.empty(max(0, free - keep), dtype=torch.uint8, device='cuda:0') if free > keep else None
print('held', 0 if held is None else held.numel(), flush=True)
sys.stdin.readline()
"; }
        read -r _ _ <&"${HOLD[0]}"
        local ours fits
        ours="$(LOADOUT_ENGINE=installed "$VPY" - "$model" <<'EOF'
import sys
from engine.gguf_file import load_profile
from engine.hardware import detect
from planner.plan import plan
from planner.request import Request
p = plan(detect(measure=False), load_profile(sys.argv[1]), Request(context=8192, advise=False))
e = p.engine
types = {1: "f16", 8: "q8_0", 2: "q4_0"}
args = [f"-ngl {e['n_gpu_layers']}", f"-fa {1 if e.get('flash_attn') else 0}",
        f"-ctk {types.get(e['type_k'], 'f16')} -ctv {types.get(e['type_v'], 'f16')}",
        f"-ub {e['n_ubatch']} -b {e['n_batch']}"]
if e.get("tensor_split"):
    args.append("-ts " + "/".join(f"{x:g}" for x in e["tensor_split"]))
for pattern, dev in e.get("tensor_overrides") or []:
    args.append(f"-ot {pattern}={dev}")
print(" ".join(args))
EOF
)"
        fits="$("$FIT" -m "$model" -c 8192 2>/dev/null | tail -1 | sed 's/-c [0-9]* //')"
        local tg_ours tg_fit
        # shellcheck disable=SC2086
        tg_ours="$("$BENCH" -m "$model" $ours -p 0 -n 16 -r 1 -o json 2>/dev/null | tg_of)"
        # shellcheck disable=SC2086
        tg_fit="$("$BENCH" -m "$model" $fits -p 0 -n 16 -r 1 -o json 2>/dev/null | tg_of)"
        echo >&"${HOLD[1]}"
        wait "$HOLD_PID" 2>/dev/null || true
        printf '%-8s %-44s %-44s %9s %9s %7s\n' "$cap" "${ours:0:44}" "${fits:0:44}" \
            "${tg_ours:-fail}" "${tg_fit:-fail}" \
            "$("$VPY" -c "a,b='${tg_ours:-0}','${tg_fit:-0}'; print(f'{float(a)/float(b):.2f}' if float(b or 0) else '-')" 2>/dev/null || echo -)"
    done
}

main() {
    if [ "${1:-}" = "prepare" ]; then prepare; exit 0; fi
    if [ "${1:-}" = "trim" ]; then trim_sdist "$2" "$3"; exit 0; fi
    mkdir -p "$WORK"
    {
        say "preflight"; preflight
        say "python packages"; setup_python
        say "CUDA engine build ($JOBS jobs)"; build_engine
        say "memory and placement (bench/gpu_memory.py)"; memory_checks
        say "placement against llama.cpp --fit (decode ratio per cap)"; fit_compare
        say "done"
    } 2>&1 | tee "$WORK/report.txt"
}

main "$@"
