"""Where a decoded token's time goes, on the engine directly: the demo against its twins.

Loads the demo (SmolLM2-135M-Instruct) and synthetic llamas of the demo's shape and
tensor types (30 blocks 576 wide, 49k vocabulary, Q4_1 matrices, a tied Q8_0 embedding)
with llama.cpp's own API (no engine thread, no sampler, no Python between the calls), one
thread each, and times, round after round, each model in turn (the order rotating):

- ``decode``: ``llama_decode`` of one token at a time, fed the same token ids in every
  model (the demo's own greedy continuation of a prose prompt, at the same depth), in the
  calling thread's CPU seconds (one thread: llama.cpp computes in it);
- ``argmax``: the greedy pick over the logits row (what the engine does per token);
- ``piece``: ``llama_token_to_piece`` of the token fed (the detokeniser's share).

Twins: ``random twin`` is the file every earlier bench wrote (random weights N(0, 0.5)
in every matrix, norms at 1, the synthetic tokenizer); ``scaled twin`` has random weights
at the demo's own per-tensor spread (each matrix drawn with the standard deviation of the
demo's tensor of that name, norms copied); ``demo copy`` is the demo rewritten whole by
:func:`bench.real_weights.cut_demo` (the same bytes: it checks that a written file costs
what the demo costs).

It also prints what the logits look like (the largest, and how many rows held inf or
NaN), because a random model's hidden state may run out of range. ``--per-op`` times
every graph node instead (llama.cpp's eval callback: the graph runs node by node, so the
total is higher) and prints the CPU microseconds per token of each kind of node.

Run: ``.venv/bin/python bench/decode_parts.py`` (about two minutes; CPU).
"""

from __future__ import annotations

import argparse
import ctypes
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROSE = ("The history of the lighthouse begins with fires lit on hilltops to guide ships "
         "home. Over centuries these fires became towers of stone, and the towers gained "
         "lenses, clockwork, and finally electric lamps. ") * 8


class NodeClock:
    """CPU seconds per kind of graph node (its name without the block number), from
    llama.cpp's eval callback: asked about every node, the scheduler computes them one at
    a time and reports each when done."""

    def __init__(self) -> None:
        import llama_cpp

        base = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"))
        self._name = base.ggml_get_name
        self._name.restype, self._name.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
        self._op = base.ggml_op_desc
        self._op.restype, self._op.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
        self.by_op = False  # True: per ggml op (matmuls split into weights and attention)
        self.spent: dict[str, float] | None = None  # None: not counting
        self._last = 0.0
        self.callback = llama_cpp.ggml_backend_sched_eval_callback(self._on_node)

    def start(self) -> None:
        self._last = time.thread_time()

    def _on_node(self, tensor: Any, ask: bool, _user: Any) -> bool:
        if ask:
            return True
        now = time.thread_time()
        if self.spent is not None:
            name = self._name(tensor).decode()
            if self.by_op:  # weight or attention matmul, else ggml's op name
                op = self._op(tensor).decode()
                kind = ("attention matmul" if name.startswith("kq") else "weight matmul") \
                    if op == "MUL_MAT" else op
            else:
                kind = re.sub(r"(-\d+|_l\d+| \(.*)", "", name)
            self.spent[kind] = self.spent.get(kind, 0.0) + now - self._last
        self._last = time.thread_time()
        return True


class Native:
    """A model and a one-thread context, loaded with llama.cpp's API."""

    def __init__(self, path: Path, n_ctx: int, mmap: bool = True,
                 clock: NodeClock | None = None) -> None:
        from engine.native.model import llama

        lib = self.lib = llama()
        mp = lib.llama_model_default_params()
        mp.n_gpu_layers = 0
        mp.use_mmap = mmap
        self.model = lib.llama_model_load_from_file(str(path).encode(), mp)
        if not self.model:
            raise RuntimeError(f"cannot load {path}")
        self.vocab = lib.llama_model_get_vocab(self.model)
        self.n_vocab = int(lib.llama_vocab_n_tokens(self.vocab))
        cp = lib.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = n_ctx
        cp.n_ubatch = 512
        cp.n_threads = 1
        cp.n_threads_batch = 1
        cp.flash_attn_type = 0  # off, as the planner runs an f16 cache on a CPU
        if clock is not None:
            cp.cb_eval = clock.callback
        self.clock = clock
        self.ctx = lib.llama_init_from_model(self.model, cp)
        self.memory = lib.llama_get_memory(self.ctx)

    def clear(self) -> None:
        self.lib.llama_memory_clear(self.memory, True)

    def decode(self, ids: list[int], pos: int, last_logits: bool = True) -> None:
        lib = self.lib
        batch = lib.llama_batch_init(len(ids), 0, 1)
        for i, t in enumerate(ids):
            batch.token[i] = t
            batch.pos[i] = pos + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = 1 if (last_logits and i == len(ids) - 1) else 0
        batch.n_tokens = len(ids)
        try:
            if lib.llama_decode(self.ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")
            lib.llama_synchronize(self.ctx)
        finally:
            lib.llama_batch_free(batch)

    def logits(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        ptr = self.lib.llama_get_logits_ith(self.ctx, -1)
        buf = (ctypes.c_float * self.n_vocab).from_address(ctypes.addressof(ptr.contents))
        return np.frombuffer(memoryview(buf), dtype=np.float32)

    def piece(self, token: int) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = self.lib.llama_token_to_piece(self.vocab, token, buf, 64, 0, False)
        return buf.raw[:max(n, 0)]

    def tokenize(self, text: str) -> list[int]:
        raw = text.encode()
        out = (ctypes.c_int32 * (len(raw) + 8))()
        n = self.lib.llama_tokenize(self.vocab, raw, len(raw), out, len(out), False, True)
        return list(out[:n])

    def free(self) -> None:
        self.lib.llama_free(self.ctx)
        self.lib.llama_model_free(self.model)


def demo_tensors() -> tuple[Any, dict[str, Any]]:
    """The demo's GGUF reader and its tensors by name."""
    import gguf

    from engine.demo import demo_model_path

    reader = gguf.GGUFReader(str(demo_model_path()))
    return reader, {t.name: t for t in reader.tensors}


def write_twin(path: Path, kind: str) -> Path:
    """A model of the demo's shape and types, random weights: ``random`` (N(0, 0.5), norms
    1) or ``scaled`` (at each demo tensor's own spread, norms copied)."""
    from gguf import GGMLQuantizationType, GGUFWriter
    from gguf.quants import dequantize, quantize

    from tests.helpers.gguf_factory import Shape, _common_kv, _vocab

    _, tensors = demo_tensors()
    shape = Shape(n_layers=30, n_embd=576, n_head=9, n_head_kv=3, head_dim=64, n_ff=1536,
                  n_vocab=49152, weight_type="Q4_1")
    writer = GGUFWriter(str(path), "llama")
    _common_kv("llama", shape)(writer)
    _vocab(writer, shape.n_vocab)
    rng = np.random.default_rng(0)
    for name, t in tensors.items():
        qtype = GGMLQuantizationType(int(t.tensor_type))
        dims = tuple(int(d) for d in reversed(t.shape))  # numpy order
        real = dequantize(np.asarray(t.data), qtype).reshape(dims).astype(np.float32)
        if name.endswith("norm.weight"):
            arr = real if kind == "scaled" else np.ones(dims, np.float32)
        elif kind == "scaled":
            arr = rng.standard_normal(dims, dtype=np.float32) * float(real.std())
        else:
            arr = rng.standard_normal(dims, dtype=np.float32) * 0.5
        if qtype == GGMLQuantizationType.F32:
            writer.add_tensor(name, arr)
        else:
            writer.add_tensor(name, quantize(arr, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def run_once(m: Native, prompt: list[int], feed: list[int]) -> dict[str, float]:
    """One request: the prompt, then ``feed`` one token at a time; CPU seconds per token
    of each part, and what the logits looked like."""
    m.clear()
    m.decode(prompt, 0)
    t_dec = t_arg = t_piece = 0.0
    top, bad = 0.0, 0
    pos = len(prompt)
    if m.clock is not None:
        m.clock.spent = {}
    for tok in feed:
        c0 = time.thread_time()
        if m.clock is not None:
            m.clock.start()
        m.decode([tok], pos)
        c1 = time.thread_time()
        row = m.logits()
        best = int(row.argmax())
        c2 = time.thread_time()
        m.piece(tok)
        c3 = time.thread_time()
        t_dec += c1 - c0
        t_arg += c2 - c1
        t_piece += c3 - c2
        pos += 1
        top = max(top, float(np.abs(row[best])))
        bad += int(not np.isfinite(row).all())
    n = len(feed)
    out = {"decode": t_dec / n, "argmax": t_arg / n, "piece": t_piece / n,
           "top": top, "bad": bad}
    if m.clock is not None and m.clock.spent is not None:
        out.update({f"op {k}": v / n for k, v in m.clock.spent.items()})
        m.clock.spent = None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--prompt", type=int, default=64, help="prompt tokens")
    parser.add_argument("--tokens", type=int, default=48, help="decoded tokens per request")
    parser.add_argument("--twins", default="random,scaled,copy",
                        help="which twins to load (random, scaled, copy)")
    parser.add_argument("--per-op", action="store_true",
                        help="time each graph node (slower; per kind of node)")
    parser.add_argument("--no-mmap", action="store_true",
                        help="read the weights into memory instead of mapping the files")
    parser.add_argument("--prefill-ops", action="store_true",
                        help="time a prompt's nodes per ggml op instead (the demo and the "
                             "similar models of bench/self_calibration.py)")
    args = parser.parse_args(argv)
    if args.prefill_ops:
        return prefill_ops(args)
    from bench.real_weights import cut_demo
    from engine.demo import demo_model_path

    with tempfile.TemporaryDirectory(prefix="loadout-parts-") as tmp:
        paths = {"demo": Path(demo_model_path())}
        for kind in args.twins.split(","):
            if kind == "copy":  # the demo rewritten by the cut, whole: must cost the same
                paths["demo copy"] = cut_demo(Path(tmp) / "copy.gguf", 30, 576, 1536)
                continue
            paths[f"{kind} twin"] = write_twin(Path(tmp) / f"{kind}.gguf", kind)
        n_ctx = args.prompt + args.tokens + 16
        clock = NodeClock() if args.per_op else None
        models = {name: Native(p, n_ctx, not args.no_mmap, clock) for name, p in paths.items()}
        try:
            demo = models["demo"]
            prompt = demo.tokenize(PROSE)[:args.prompt]
            # the demo's own greedy continuation: the ids every model is fed
            demo.clear()
            demo.decode(prompt, 0)
            feed: list[int] = []
            for _ in range(args.tokens):
                feed.append(int(demo.logits().argmax()))
                demo.decode([feed[-1]], len(prompt) + len(feed) - 1)
            for m in models.values():
                run_once(m, prompt[:16], feed[:4])  # first touch, not measured
            runs: dict[str, list[dict[str, float]]] = {n: [] for n in models}
            names = list(models)
            for r in range(args.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                for name in order:
                    runs[name].append(run_once(models[name], prompt, feed))
                print(f"round {r + 1}: " + ", ".join(
                    f"{n} {runs[n][-1]['decode'] * 1e3:.2f} ms" for n in names), flush=True)
        finally:
            for m in models.values():
                m.free()
    base = runs["demo"]
    print(f"per token, CPU seconds of the calling thread (1 thread, prompt {args.prompt} "
          f"tokens, {args.tokens} decoded, median over {args.rounds} rotating rounds); "
          f"ratio: over the demo in the same round:")
    print(f"  {'model':<13} {'decode ms':>9} {'ratio':>6} {'range':>11} {'argmax us':>9} "
          f"{'piece us':>8} {'max|logit|':>10} {'non-finite rows':>15}")
    for name, rs in runs.items():
        ratio = [r["decode"] / b["decode"] for r, b in zip(rs, base, strict=True)]
        print(f"  {name:<13} {statistics.median(r['decode'] for r in rs) * 1e3:9.3f} "
              f"{statistics.median(ratio):6.3f} {min(ratio):5.3f}..{max(ratio):5.3f} "
              f"{statistics.median(r['argmax'] for r in rs) * 1e6:9.1f} "
              f"{statistics.median(r['piece'] for r in rs) * 1e6:8.1f} "
              f"{max(r['top'] for r in rs):10.3g} {sum(r['bad'] for r in rs):>15d}")
    if args.per_op:
        per_op(runs)
    return 0


def prefill_ops(args: argparse.Namespace) -> int:
    """A prompt of ``--prompt`` tokens in one batch, CPU microseconds per prompt token per
    ggml op: the demo, and the similar model of ``bench/self_calibration.py`` (cut from
    it) in Q4_1 and Q8_0."""
    from bench.real_weights import cut_demo
    from engine.demo import demo_model_path

    clock = NodeClock()
    clock.by_op = True
    with tempfile.TemporaryDirectory(prefix="loadout-parts-") as tmp:
        paths = {"demo": Path(demo_model_path()),
                 "similar": cut_demo(Path(tmp) / "q4_1.gguf", 20, 384, 1024),
                 "similar Q8_0": cut_demo(Path(tmp) / "q8_0.gguf", 20, 384, 1024, "Q8_0")}
        models = {n: Native(p, args.prompt + 16, True, clock) for n, p in paths.items()}
        try:
            ids = models["demo"].tokenize(PROSE * 8)[:args.prompt]
            runs: dict[str, list[dict[str, float]]] = {n: [] for n in models}
            for r in range(args.rounds):
                names = list(models)
                for name in names[r % 3:] + names[:r % 3]:
                    models[name].clear()
                    clock.spent = {}
                    clock.start()
                    models[name].decode(ids, 0)
                    runs[name].append({k: v / len(ids) for k, v in clock.spent.items()})
                    clock.spent = None
        finally:
            for m in models.values():
                m.free()
    med = {n: {k: statistics.median(r.get(k, 0.0) for r in rs) for k in rs[0]}
           for n, rs in runs.items()}
    print(f"prefill of {len(ids)} tokens in one batch, CPU microseconds per prompt token "
          f"per ggml op (median over {args.rounds} rotating rounds, 1 thread; each node "
          f"run alone, so a few microseconds each more than in one graph):")
    print("  " + f"{'op':<17}" + "".join(f"{n:>22}" for n in med))
    for op in sorted(med["demo"], key=lambda k: -med["demo"][k]):
        if med["demo"][op] >= 5e-6:
            print(f"  {op:<17}" + "".join(
                f"{m.get(op, 0.0) * 1e6:12.1f} ({m.get(op, 0.0) / sum(m.values()):6.1%})"
                for m in med.values()))
    print(f"  {'total':<17}" + "".join(f"{sum(m.values()) * 1e6:12.1f}{'':>10}"
                                       for m in med.values()))
    return 0


def per_op(runs: dict[str, list[dict[str, float]]]) -> None:
    """CPU microseconds per token of each kind of node (median over the rounds), and
    each model's over the demo's."""
    names = list(runs)
    ops = sorted({k for r in runs["demo"] for k in r if k.startswith("op ")},
                 key=lambda k: -statistics.median(r.get(k, 0.0) for r in runs["demo"]))
    print("per kind of graph node, CPU microseconds per token (median), and over the demo's:")
    print("  " + f"{'node':<16}" + "".join(f"{n:>24}" for n in names))
    for op in ops:
        med = {n: statistics.median(r.get(op, 0.0) for r in runs[n]) for n in names}
        if med["demo"] < 50e-6:  # the views and copies: a few microseconds each
            continue
        cells = "".join(f"{med[n] * 1e6:14.1f} ({med[n] / med['demo']:5.3f})" for n in names)
        print(f"  {op[3:]:<16}" + cells)


if __name__ == "__main__":
    sys.exit(main())
