"""What one core of this CPU makes of Q4_K weights with the engine's own kernels.

The speed model prices a CPU per core: GFLOP/s of Q4_K block matrices in prefill and
GB/s of Q4_K bytes in decode (``planner/speed.py``; other weight types relative to
Q4_K's). Its constants come from other machines' published rows; this probe measures the
two figures here, once per machine (cached with the other hardware figures).

It writes a small llama of random Q4_K weights to a temporary folder, loads it with
llama.cpp's API on one thread, prefills a batch of :data:`PREFILL_TOKENS` tokens and
decodes :data:`DECODE_TOKENS` tokens one at a time, a few rounds each, and keeps the
fastest round of each (the calling thread's CPU seconds: other work on the machine can
only make a round slower). The times are turned into the speed model's per-core rates
with the model's own pricing of the probe model (its attention and per-layer costs
taken out), so the planner predicts the probe model at the times measured.

Detection runs it in a child process (``loadout calibrate --core-only --json``, which
prints one JSON document), so a native failure cannot take its caller down and the
engine is never loaded into the app's process.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy and the speed model are imported where the probe runs: a
    import numpy as np  # detection that only reads the cache (every command) does without

log = logging.getLogger(__name__)

SCHEMA = "loadout.core_rate/1"
METHOD = "llama_q4_k_probe/1"  # what a cached figure was measured with

# The probe model: blocks 768 wide with a 2048-row feed-forward (rows a multiple of
# Q4_K's 256), as bench/cpu_type_rate.py's; enough blocks that a decoded token's weights
# (about 42 MB) do not fit in a CPU cache, so decode streams them from RAM as a model's do.
N_LAYERS = 12
N_EMBD = 768
N_HEAD = 12
N_HEAD_KV = 4
HEAD_DIM = 64
N_FF = 2048
N_VOCAB = 512
PREFILL_TOKENS = 128
DECODE_TOKENS = 16
Q4_K_BLOCK, Q4_K_BYTES = 256, 144


@dataclass(frozen=True)
class CoreRate:
    """One core's rates of Q4_K weights, measured here.

    Attributes:
        prefill_gflops: GFLOP/s of block matrices in a prompt batch (two per weight per
            token), attention priced apart as the speed model prices it.
        decode_gbps: GB/s of weight bytes in decode (per-layer and KV costs apart).
        seconds: wall seconds the probe took (writing, loading and timing).
        rounds: timed rounds of each.
    """

    prefill_gflops: float
    decode_gbps: float
    seconds: float = 0.0
    rounds: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "method": METHOD,
                "prefill_gflops": round(self.prefill_gflops, 1),
                "decode_gbps": round(self.decode_gbps, 2),
                "seconds": round(self.seconds, 2), "rounds": self.rounds}


def _matrices(n_layers: int) -> list[tuple[str, tuple[int, int]]]:
    """The probe's Q4_K matrices (name, numpy shape: rows, then the row's weights)."""
    q, kv = N_HEAD * HEAD_DIM, N_HEAD_KV * HEAD_DIM
    out: list[tuple[str, tuple[int, int]]] = []
    for i in range(n_layers):
        out += [(f"blk.{i}.attn_q.weight", (q, N_EMBD)),
                (f"blk.{i}.attn_k.weight", (kv, N_EMBD)),
                (f"blk.{i}.attn_v.weight", (kv, N_EMBD)),
                (f"blk.{i}.attn_output.weight", (N_EMBD, q)),
                (f"blk.{i}.ffn_gate.weight", (N_FF, N_EMBD)),
                (f"blk.{i}.ffn_up.weight", (N_FF, N_EMBD)),
                (f"blk.{i}.ffn_down.weight", (N_EMBD, N_FF))]
    return out


def block_weights(n_layers: int) -> int:
    """Weights of the probe's block matrices (what a token multiplies)."""
    return sum(r * c for _, (r, c) in _matrices(n_layers))


def _q4_k(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """Q4_K rows of random 4-bit codes (144-byte blocks of 256 weights: two f16 scales,
    12 bytes of sub-block scales, 128 of codes) with small finite scales."""
    import numpy as np

    blocks = rng.integers(0, 256, size=(rows, cols // Q4_K_BLOCK, Q4_K_BYTES), dtype=np.uint8)
    blocks[:, :, 0:4] = np.array([0.002, 0.001], dtype=np.float16).view(np.uint8)
    return blocks.reshape(rows, cols // Q4_K_BLOCK * Q4_K_BYTES)


def write_probe_model(path: Path, n_layers: int = N_LAYERS) -> Path:
    """Write the probe llama (random Q4_K block matrices, F32 norms, a small vocabulary).

    Blocks share their random bytes (one set per matrix shape): a token still reads
    every block's own copy from memory."""
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType

    rng = np.random.default_rng(11)
    writer = GGUFWriter(str(path), "llama")
    writer.add_name("loadout-core-probe")
    writer.add_block_count(n_layers)
    writer.add_context_length(4096)
    writer.add_embedding_length(N_EMBD)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_key_length(HEAD_DIM)
    writer.add_value_length(HEAD_DIM)
    writer.add_rope_dimension_count(HEAD_DIM)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(10000.0)
    writer.add_file_type(LlamaFileType.MOSTLY_Q4_K_M)
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
    tokens += [f"t{i}" for i in range(N_VOCAB - len(tokens))]
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([-float(i) for i in range(N_VOCAB)])
    writer.add_token_types([2, 3, 3] + [6] * 256 + [1] * (N_VOCAB - 259))
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    q4_k = GGMLQuantizationType.Q4_K
    shared: dict[tuple[int, int], np.ndarray] = {}
    ones = np.ones(N_EMBD, dtype=np.float32)
    embd = (rng.standard_normal((N_VOCAB, N_EMBD), dtype=np.float32) * 0.5).astype(np.float16)
    writer.add_tensor("token_embd.weight", embd)
    for name, shape in _matrices(n_layers):
        if shape not in shared:
            shared[shape] = _q4_k(*shape, rng)
        layer = name.split(".")[1]
        if name.endswith("attn_q.weight"):
            writer.add_tensor(f"blk.{layer}.attn_norm.weight", ones)
            writer.add_tensor(f"blk.{layer}.ffn_norm.weight", ones)
        writer.add_tensor(name, shared[shape], raw_dtype=q4_k)
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", embd)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


class _Probe:
    """The probe model and a one-thread context, loaded with llama.cpp's API."""

    def __init__(self, path: Path, n_ctx: int) -> None:
        from engine.native.model import llama

        lib = self.lib = llama()
        mp = lib.llama_model_default_params()
        mp.n_gpu_layers = 0
        self.model = lib.llama_model_load_from_file(str(path).encode(), mp)
        if not self.model:
            raise RuntimeError(f"the engine could not load the probe model {path}")
        cp = lib.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = n_ctx
        cp.n_ubatch = 512
        cp.n_threads = 1
        cp.n_threads_batch = 1
        cp.flash_attn_type = 0  # off: the planner runs an f16 cache on a CPU without it
        cp.no_perf = True
        self.ctx = lib.llama_init_from_model(self.model, cp)
        if not self.ctx:
            lib.llama_model_free(self.model)
            raise RuntimeError("the engine could not make a context for the probe model")
        self.memory = lib.llama_get_memory(self.ctx)

    def run(self, ids: list[int], pos: int) -> float:
        """Decode ``ids`` as one batch at ``pos``; the calling thread's CPU seconds."""
        from engine.native.batch import Batch

        batch = Batch(len(ids), 1)
        try:
            batch.add_run(ids, pos, 0, logits_last=True)
            start = time.thread_time()
            if batch.decode(self.ctx) != 0:
                raise RuntimeError("llama_decode failed on the probe model")
            self.lib.llama_synchronize(self.ctx)
            return time.thread_time() - start
        finally:
            batch.free()

    def clear(self) -> None:
        self.lib.llama_memory_clear(self.memory, True)

    def free(self) -> None:
        self.lib.llama_free(self.ctx)
        self.lib.llama_model_free(self.model)


def prefill_gflops(seconds_per_token: float, n_layers: int, prompt: int) -> float:
    """The per-core rate at which the speed model prefills the probe in the time measured:
    its block matrices' FLOPs plus its attention at :data:`CPU_PREFILL_ATTENTION_RATE`
    (the output layer runs for the prompt's last token only: left out)."""
    from planner.speed import CPU_PREFILL_ATTENTION_RATE, prefill_kv_cells

    flops = 2.0 * block_weights(n_layers)
    attn = n_layers * 2 * N_HEAD * (2 * HEAD_DIM) * prefill_kv_cells(prompt, 512)
    return (flops + attn / CPU_PREFILL_ATTENTION_RATE) / seconds_per_token / 1e9


def decode_gbps(seconds_per_token: float, n_layers: int, depth: float) -> float:
    """The per-core rate at which the speed model decodes the probe in the time measured:
    the weight bytes (blocks and output) and the KV cache read at ``depth``, after its
    fixed cost per layer (one thread)."""
    from planner.speed import CONSTANTS, cpu_kv_cost

    c = CONSTANTS
    weights = block_weights(n_layers) * Q4_K_BYTES / Q4_K_BLOCK + N_VOCAB * N_EMBD * 2
    kv = depth * n_layers * 2 * N_HEAD_KV * HEAD_DIM * 2 * cpu_kv_cost(False, c)
    fixed = n_layers * (c.cpu_layer_s + c.cpu_layer_thread_s)
    left = max(seconds_per_token - fixed, 0.25 * seconds_per_token)
    return (weights + kv) / left / 1e9


def measure(budget_s: float = 1.1, max_rounds: int = 3) -> CoreRate:
    """Measure this CPU's per-core rates in this process (see the module's text).

    Args:
        budget_s: wall seconds after which no further round starts (one always runs).
        max_rounds: timed rounds at most (each: one prefill, one decode).

    Raises:
        RuntimeError: the engine could not load or run the probe model.
        OSError: the temporary folder could not be written.
    """
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="loadout-core-") as tmp:
        probe = _Probe(write_probe_model(Path(tmp) / "probe.gguf"), PREFILL_TOKENS + 32)
        try:
            ids = [3 + (7 * i) % (N_VOCAB - 3) for i in range(PREFILL_TOKENS)]
            probe.run(ids[:8], 0)  # the first touch of every weight: not timed
            t0 = time.perf_counter()
            best_p = best_d = math.inf
            done = 0
            while done < max(1, max_rounds):
                probe.clear()
                best_p = min(best_p, probe.run(ids, 0) / PREFILL_TOKENS)
                probe.clear()
                per = [probe.run([ids[i]], i) for i in range(DECODE_TOKENS)]
                best_d = min(best_d, statistics.median(per))  # a token a neighbour slowed
                #   does not count
                done += 1
                spent = time.perf_counter() - start
                if spent + (time.perf_counter() - t0) / done > budget_s:
                    break  # the next round would end past the budget
        finally:
            probe.free()
    rate = CoreRate(prefill_gflops=prefill_gflops(best_p, N_LAYERS, PREFILL_TOKENS),
                    decode_gbps=decode_gbps(best_d, N_LAYERS, DECODE_TOKENS / 2),
                    seconds=time.perf_counter() - start, rounds=done)
    log.info("one core: %.1f GFLOP/s of Q4_K in prefill, %.2f GB/s in decode (%d rounds, "
             "%.2f s)", rate.prefill_gflops, rate.decode_gbps, done, rate.seconds)
    return rate


def child_command() -> list[str]:
    """How a fresh process runs the probe: ``loadout calibrate --core-only --json`` (the
    frozen bundle's console executable, or this interpreter with ``-m loadout``)."""
    from engine.engine_select import loadout_command

    return [*loadout_command(), "calibrate", "--core-only", "--json"]


def measure_in_child(timeout_s: float = 60.0, cancelled: Callable[[], bool] = lambda: False,
                     command: Sequence[str] | None = None) -> CoreRate | None:
    """:func:`measure` in a child process; None when it fails, hangs, is cancelled or
    answers nonsense (the caller then keeps the speed model's constants)."""
    cmd = list(command) if command is not None else child_command()
    try:
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
    except OSError as exc:
        log.warning("the CPU core probe did not start: %s", exc)
        return None
    deadline = time.monotonic() + timeout_s
    while True:
        try:  # reads both pipes as they fill: a chatty child never blocks on its stderr
            out, err = child.communicate(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            if cancelled() or time.monotonic() > deadline:
                child.kill()
                child.communicate()
                log.warning("the CPU core probe was %s", "cancelled" if cancelled() else
                            f"stopped after {timeout_s:.0f} s")
                return None
    if child.returncode != 0:
        log.warning("the CPU core probe failed (exit %d): %s", child.returncode,
                    err.strip()[-500:])
        return None
    rate = parse(out)
    if rate is None:
        log.warning("the CPU core probe answered something else: %r", out[-300:])
    return rate


def parse(text: str) -> CoreRate | None:
    """The probe's JSON answer, or None when it is not a sane one."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return None
    return from_cache(doc)


def from_cache(entry: Any) -> CoreRate | None:
    """The rates of a cache entry (or the probe's answer) measured by this probe's
    :data:`METHOD`, or None when there are none, another method made them, or they are
    not sane numbers."""
    if not isinstance(entry, dict) or entry.get("method") != METHOD:
        return None
    p, d = entry.get("prefill_gflops"), entry.get("decode_gbps")
    if not isinstance(p, int | float) or not isinstance(d, int | float) or \
            not valid_rate(p) or not valid_rate(d):
        return None
    seconds, rounds = entry.get("seconds"), entry.get("rounds")
    return CoreRate(float(p), float(d),
                    float(seconds) if isinstance(seconds, int | float) and valid_rate(seconds)
                    else 0.0,
                    int(rounds) if isinstance(rounds, int) and rounds > 0 else 0)


def failed_before(entry: Any) -> bool:
    """Whether the cache says this probe already failed on this machine."""
    return isinstance(entry, dict) and entry.get("method") == METHOD and \
        entry.get("failed") is True


def cache_entry(rate: CoreRate | None, busy: bool = False) -> dict[str, Any]:
    """What the hardware cache keeps of a probe (its failure too: not retried each time;
    ``busy``: the machine was busy, so the next measuring detection measures again)."""
    if rate is None:
        return {"method": METHOD, "failed": True}
    doc = rate.to_json()
    doc.pop("schema")
    doc["busy"] = busy
    return doc


def best(a: CoreRate | None, b: CoreRate | None) -> CoreRate | None:
    """The faster of two measurements, figure by figure (either may be missing)."""
    if a is None or b is None:
        return a or b
    return CoreRate(max(a.prefill_gflops, b.prefill_gflops), max(a.decode_gbps, b.decode_gbps),
                    b.seconds, b.rounds)


def valid_rate(value: Any) -> bool:
    """A per-core rate worth believing: a finite number between 0.1 and 10,000."""
    return isinstance(value, int | float) and not isinstance(value, bool) and \
        math.isfinite(value) and 0.1 <= value <= 10_000


def main() -> int:
    """Measure and print one ``loadout.core_rate/1`` document; 1 when the probe failed."""
    try:
        rate = measure()
    except (RuntimeError, OSError) as exc:
        print(f"core probe failed: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(rate.to_json()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
