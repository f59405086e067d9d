"""Compute-buffer size: ggml's graph allocator replayed over llama.cpp's graph.

llama.cpp sizes its compute buffers by allocating the worst-case graph (``n_ubatch``
tokens against a full KV cache) with ``ggml-alloc``. We rebuild that graph's intermediate
tensors, block by block, in the order ``ggml_build_forward_expand`` adds them (transcribed
from ``llm_graph_context::build_attn``/``build_attn_mha``/``build_ffn``/``build_moe_ffn``
and the model builders), and run the same allocator: graph inputs first, element-wise ops
in place on a parent with no other reader, every tensor freed after its last reader,
best-fit free list with 32-byte alignment (``ggml_dyn_tallocr``), one buffer per device.
The result is the high-water mark of each buffer: what llama.cpp reports as
``compute buffer size``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from planner.graph_alloc import Graph, Tensor

F32, F16, I32, I64 = 4, 2, 4, 8


@dataclass(frozen=True)
class LayerShape:
    """What one block computes, as far as its intermediate tensors go."""

    kind: str               # "attn" or "recurrent"
    n_head: int
    head_dim_k: int
    head_dim_v: int
    n_head_kv: int
    n_kv: int               # KV cells the block attends to (per stream)
    n_ff: int               # dense FFN width (0 for none)
    n_ff_exp: int = 0       # routed expert width
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_shexp: int = 0
    recurrent_width: int = 0    # conv channels of a recurrent block
    recurrent_state: int = 0    # f32 elements of one sequence's state
    swa: bool = False           # reads the SWA mask instead of the full one
    qk_norm: bool = False
    post_norms: bool = False    # gemma-style norms after attention and FFN
    gated_attn: bool = False    # qwen3.5-style output gate on attention
    device: str = "host"
    attn_device: str = ""       # where attention runs ("" = device; host without offload_kqv)
    offload_copy: int = 0       # bytes of a host weight copied in for the MoE matmuls
    # a host layer run by a GPU (op offload): its K and V caches stay in host memory, so
    # the new K/V rows are copied to the host for the cache write and the cache views
    # (these bytes) to the device for attention
    kv_host_k: int = 0
    kv_host_v: int = 0
    attn_copy: int = 0          # bytes of the q/k/v/o projections copied in (op offload)
    delta_inner: int = 0        # a gated delta net's value width (qwen35): its own graph
    delta_heads: int = 0        # ... and its value heads


@dataclass(frozen=True)
class GraphParams:
    """Batch and context facts shared by every block of one worst-case graph."""

    n_tokens: int
    n_outputs: int
    n_embd: int
    n_vocab: int
    n_seq: int
    n_stream: int
    flash: bool
    k_rot: int          # Hadamard rotation size for a quantized K cache (0: none)
    v_rot: int          # ... for a quantized V cache
    v_trans_width: int  # widest V row (transposed V cache without flash attention)
    n_pos: int = 1      # positions per token (4 for multi-section rope)
    output_device: str = "host"
    input_device: str = "host"
    mtp: bool = False   # the MTP draft graph: embeddings + the trunk's hidden state in
    output_copy: int = 0  # a host output weight copied to the output device (op offload)
    late_rows: bool = False  # the output rows are picked after the last block (which runs
    #   for every token), its hidden state kept as an output (``t_h_nextn``)
    output_weight: int = 0  # bytes of the output head's weight (copied if the head moves)
    # per device, the largest tensor its kernels take (Vulkan: maxStorageBufferRange);
    # ggml's scheduler runs an op with a larger source or result on the CPU instead
    op_limits: tuple[tuple[str, int], ...] = ()
    # devices whose backend reorders each split's nodes before allocation (Vulkan's
    # ``ggml_vk_graph_optimize``: independent nodes within 20 of the next are run next)
    reorder_devices: tuple[str, ...] = ()


class _Builder:
    """Transcribes llama.cpp's graph construction into :class:`Graph` calls."""

    def __init__(self, p: GraphParams, layers: tuple[LayerShape, ...]) -> None:
        self.p = p
        self.g = Graph()
        self.layers = layers
        self._inputs: dict[tuple[str, str], Tensor] = {}
        self._copies: list[tuple[int, str]] = []
        self._wo: Tensor | None = None
        self._norm_copies = False
        self.tokens = self.g.input(p.n_tokens * I32, p.input_device)
        # the embeddings input (a batch may bring embeddings instead of tokens): a graph
        # input of the CPU backend that nothing reads here, so it is never freed
        self.g.leafs.append(self.g.input(p.n_embd * p.n_tokens * F32, "host"))

    def inp(self, name: str, dev: str) -> Tensor | None:
        """A graph input as the device ``dev`` sees it (the scheduler copies inputs into
        the buffer of each device that reads them)."""
        key = (name, dev)
        if key not in self._inputs:
            p, t = self.p, self.p.n_tokens
            size = {
                "pos": t * I32 * p.n_pos,
                "mask_full": self._mask_cells(False) * t * (F16 if p.flash else F32),
                "mask_swa": self._mask_cells(True) * t * (F16 if p.flash else F32),
                "k_idxs": t * I64,
                "v_idxs": (t if p.flash else t * max(p.v_trans_width, 1)) * I64,
                "k_idxs_swa": t * I64,
                "v_idxs_swa": (t if p.flash else t * max(p.v_trans_width, 1)) * I64,
                "out_ids": p.n_outputs * I32,
                "k_rot": p.k_rot * p.k_rot * F32,
                "v_rot": p.v_rot * p.v_rot * F32,
            }[name]
            if size == 0:
                return None
            if dev == "host":
                self._inputs[key] = self.g.input(size, dev)
            else:
                # the scheduler keeps every graph input in the CPU backend's buffer and
                # copies it to each device that reads it, at the start of the split that
                # first reads it; the host's copy is freed after the first such copy
                # unless the host reads it later itself
                host = self._inputs.get((name, "host"))
                if host is None:
                    self._inputs[(name, "host")] = host = self.g.input(size, "host")
                    self.g.leafs.append(host)
                self._inputs[key] = self.g.copy(size, dev, host)
        return self._inputs[key]

    def _idxs(self, kv: str, s: LayerShape) -> str:
        """The cache-row index input of ``s``'s cache: a model with both SWA and full
        blocks has two caches, each with its own (``llm_graph_input_attn_kv_iswa``)."""
        return f"{kv}_idxs_swa" if s.swa and self._iswa() else f"{kv}_idxs"

    def _iswa(self) -> bool:
        """Whether the model has both SWA and full-attention blocks (two caches)."""
        return bool(self._mask_cells(True) and self._mask_cells(False))

    def _mask_cells(self, swa: bool) -> int:
        return max((s.n_kv for s in self.layers if s.kind == "attn" and s.swa == swa),
                   default=0)

    def move(self, x: Tensor, dev: str) -> Tensor:
        """The hidden state on ``dev``: a copy when it crosses devices."""
        return x if x.device == dev else self.g.copy(x.size, dev, x)

    def norm(self, x: Tensor, dev: str, size: int = 0, width: int = 0) -> Tensor:
        """rms_norm and its weight; ``size`` for the norm of a view (which has none of
        its own: the norm then gets new memory, its weight multiply runs in place).
        In a host block run by a device the ``width`` f32 weight is copied in."""
        n = self.g.op(size or x.size, dev, x, inplace=True)   # rms_norm
        copy = (self.g.copy((width or self.p.n_embd) * F32, dev, self.tokens, weight=True)
                if self._norm_copies else None)
        return self.g.op(n.size, dev, n, copy, inplace=True)  # * weight

    def attention(self, x: Tensor, s: LayerShape, early: Tensor | None = None) -> Tensor:
        """Self-attention of one block; ``early``, a node a reordering backend runs
        before the attention proper (it reads nothing attention computes)."""
        g, p, t, dev = self.g, self.p, self.p.n_tokens, s.device
        pos = self.inp("pos", dev)
        k_rot, v_rot = self.inp("k_rot", dev), self.inp("v_rot", dev)
        q_width = s.n_head * s.head_dim_k * (2 if s.gated_attn else 1)
        widths = (q_width, s.n_head_kv * s.head_dim_v, s.n_head_kv * s.head_dim_k,
                  s.n_head * s.head_dim_v)  # q, v, k, o: a host weight's copy is its share
        wq, wv, wk, self._wo = (self.g.copy(s.attn_copy * w // sum(widths), dev, self.tokens,
                                            weight=True) if s.attn_copy else None
                                for w in widths)
        q_full = g.op(q_width * t * F32, dev, x, wq)
        q_size, k_size = s.n_head * s.head_dim_k * t * F32, s.n_head_kv * s.head_dim_k * t * F32
        q = g.view(q_full, contiguous=not s.gated_attn)
        v_mm = g.op(s.n_head_kv * s.head_dim_v * t * F32, dev, x, wv)
        k_mm = g.op(k_size, dev, x, wk)
        if dev in self.p.reorder_devices and not s.kv_host_k:
            # the three projections read the same input: a reordering backend runs them
            # together, before Q's norm and rope (a host layer run by the device has a
            # split per copied weight, which nothing is moved across)
            for node in (q_full, k_mm, v_mm) if self._iswa() else (q_full, v_mm, k_mm):
                g.expand(node)
        if s.qk_norm:  # the norm of the reshaped projection; rope then runs in place on it
            q = self.norm(q, dev, q_size, s.head_dim_k)
        q = g.op(q_size, dev, q, pos, inplace=True)   # rope (new memory on a reshape)
        v = g.view(v_mm)
        k = g.view(k_mm)
        if s.qk_norm:
            k = self.norm(k, dev, k_size, s.head_dim_k)
        k = g.op(k_size, dev, k, pos, inplace=True)   # rope
        if k_rot is not None:
            q = g.view(g.op(q.size, dev, k_rot, g.view(q)))
            k = g.view(g.op(k.size, dev, k_rot, g.view(k)))
        if v_rot is not None:
            v = g.view(g.op(v.size, dev, v_rot, g.view(v)))
        # build_attn adds q, v, k in that order; its SWA + full variant q, k, v
        for node in (q, k, v) if self._iswa() else (q, v, k):
            g.expand(node)
        k_cache = v_cache = None
        if s.kv_host_k:
            k, v = g.op(k.size, "host", k), g.op(v.size, "host", v)
            g.expand(g.view(None, k, self.inp(self._idxs("k", s), "host")))
            g.expand(g.view(None, v, self.inp(self._idxs("v", s), "host")))
            k_cache, v_cache = g.copy(s.kv_host_k, dev, k), g.copy(s.kv_host_v, dev, v)
        else:
            g.expand(g.view(None, k, self.inp(self._idxs("k", s), dev)))  # into the K cache
            g.expand(g.view(None, v, self.inp(self._idxs("v", s), dev)))  # ... and V
        if early is not None:
            g.expand(early)
        adev = s.attn_device or dev
        mask = self.inp("mask_swa" if s.swa else "mask_full", adev)
        qp = g.view(self.move(q, adev), contiguous=False)  # permute
        dev = adev
        if p.flash:
            out = g.op(s.n_head * s.head_dim_v * t * F32, dev, qp, k_cache, v_cache, mask)
        else:
            kq = g.op(s.n_kv * t * s.n_head * F32, dev, qp, k_cache)
            kq = g.op(kq.size, dev, kq, mask, inplace=True)  # soft_max_ext
            kqv = g.op(s.head_dim_v * t * s.n_head * F32, dev, kq, v_cache)
            out = g.op(kqv.size, dev, g.view(kqv, contiguous=False))  # cont
        g.expand(out)
        dev = s.device
        out = self.move(out, dev)
        if v_rot is not None:
            out = g.view(g.op(out.size, dev, v_rot, g.view(out)))
        if s.gated_attn:
            # the gate is a view of Q's projection made contiguous only now, after
            # attention (llama.cpp's qwen35 builders): the projection stays alive till here
            gate = g.op(s.n_head * s.head_dim_k * t * F32, dev,
                        g.view(q_full, contiguous=False))
            sig = g.op(gate.size, dev, gate, inplace=True)
            out = g.op(out.size, dev, g.view(out), sig, inplace=True)
        return g.op(self.p.n_embd * t * F32, dev, out, self._wo)     # wo

    def delta_net(self, x: Tensor, s: LayerShape) -> Tensor:
        """A gated delta net block (llama.cpp's qwen35 builder): the q/k/v projection
        through a short convolution, L2-normed q and k, the decay and beta gates, the
        recurrence, a gated norm and the output projection."""
        g, t, dev, n_seq = self.g, self.p.n_tokens, s.device, self.p.n_seq
        width, inner, heads = s.recurrent_width, s.delta_inner, s.delta_heads
        qk = max((width - inner) // 2, 0) * t * F32
        state = max(s.recurrent_state - 3 * width, 0) * n_seq * F32
        # a host block run by the device: each weight is copied in at its split, and so
        # are the cached convolution and recurrent states
        shares = (width, 0, heads, 0, 0, heads, 0, inner, inner)
        cqkv, cconv, calpha, cbias, ca, cbeta, cnorm, cz, cout = (
            g.copy(max(s.attn_copy * w // sum(shares), 4 * F32), dev, self.tokens, weight=True)
            if s.attn_copy else None for w in shares)
        offload = bool(s.attn_copy)
        read = g.copy if offload else g.op
        conv_states = read(3 * width * n_seq * F32, dev, self.tokens)
        mixed = g.op(width * t * F32, dev, x, cqkv)
        conv_in = g.op(width * (t + 3 * n_seq) * F32, dev, conv_states,
                       g.view(mixed, contiguous=False))
        g.expand(conv_in)
        ssm_state = read(state, dev, self.tokens)
        if not offload:
            g.expand(ssm_state)
        conv = g.op(width * t * F32, dev, conv_in, cconv)
        conv = g.op(conv.size, dev, conv, inplace=True)    # silu
        alpha = g.op(heads * t * F32, dev, x, calpha)
        if dev in self.p.reorder_devices and not offload:
            g.expand(alpha)  # pulled ahead of the norms by the reordering
        q = g.op(qk, dev, g.view(conv))                     # l2 norm (a view: new memory)
        k = g.op(qk, dev, g.view(conv))
        q = g.op(qk, dev, q, inplace=True)                  # scale
        k = g.op(qk, dev, k, inplace=True)
        g.expand(q)
        g.expand(k)
        gate = g.op(alpha.size, dev, alpha, cbias)          # + dt bias (new memory)
        gate = g.op(gate.size, dev, gate, inplace=True)     # softplus
        gate = g.op(gate.size, dev, gate, ca, inplace=True)  # * a
        beta = g.op(heads * t * F32, dev, x, cbeta)
        beta = g.op(beta.size, dev, beta)                   # sigmoid (new memory)
        y = g.op(inner * t * F32 + state, dev, q, k, g.view(conv), gate, beta, ssm_state)
        g.expand(g.view(None, g.view(y)))                   # new state into the cache
        out = g.op(inner * t * F32, dev, g.view(y))         # rms_norm of a view
        out = g.op(out.size, dev, out, cnorm, inplace=True)
        g.expand(out)
        z = g.op(inner * t * F32, dev, x, cz)
        zs = g.op(z.size, dev, g.view(z))                   # silu of a reshape
        out = g.op(out.size, dev, out, zs, inplace=True)
        return g.op(self.p.n_embd * t * F32, dev, out, cout)

    def recurrent(self, x: Tensor, s: LayerShape) -> Tensor:
        if s.delta_inner and s.delta_heads:
            return self.delta_net(x, s)
        g, t, dev = self.g, self.p.n_tokens, s.device
        width, n_seq = max(s.recurrent_width, 1), self.p.n_seq
        mixed = g.op(width * t * F32, dev, x)
        z = g.op(s.n_head * s.head_dim_v * t * F32 if s.n_head else width * t * F32, dev, x)
        conv_in = g.op(width * (t + 3 * n_seq) * F32, dev, g.view(mixed, contiguous=False))
        conv = g.op(width * t * F32, dev, conv_in)
        conv = g.op(conv.size, dev, conv, inplace=True)    # silu
        y = g.op((width * t + s.recurrent_state * n_seq) * F32, dev, g.view(conv), g.view(conv))
        g.expand(g.view(None, g.view(y)))                  # new state into the cache
        out = g.op(width * t * F32, dev, g.view(y))
        out = g.op(out.size, dev, out, z, inplace=True)   # gated norm
        return g.op(self.p.n_embd * t * F32, dev, out)

    def ffn(self, x: Tensor, s: LayerShape, t: int) -> Tensor:
        g, e, dev = self.g, self.p.n_embd, s.device
        if s.n_expert:
            k = s.n_expert_used
            logits = g.op(s.n_expert * t * F32, dev, x)
            probs = g.op(logits.size, dev, logits, inplace=True)
            # argsort of every expert's probability; the top k are a view of it
            sel = g.view(g.op(s.n_expert * t * I32, dev, probs), contiguous=False)
            w = g.op(k * t * F32, dev, g.view(probs), sel)  # get_rows
            wsum = g.op(t * F32, dev, g.view(w))            # sum_rows
            wsum = g.op(wsum.size, dev, wsum)               # clamp (never in place)
            w = g.op(w.size, dev, g.view(w), wsum, inplace=True)  # div, on a reshape
            up = g.op(s.n_ff_exp * k * t * F32, dev, x, sel, self._copy())
            gate = g.op(s.n_ff_exp * k * t * F32, dev, x, sel, self._copy())
            par = g.op(gate.size, dev, gate, up)            # swiglu
            experts = g.op(e * k * t * F32, dev, par, sel, self._copy())
            experts = g.op(experts.size, dev, experts, w, inplace=True)
            out = g.op(e * t * F32, dev, g.view(experts), g.view(experts))
            for _ in range(k - 2):
                out = g.op(out.size, dev, out, g.view(experts), inplace=True)
            if s.n_ff_shexp:
                out = g.op(out.size, dev, out, self.dense(x, s.n_ff_shexp, t, dev),
                           inplace=True)
            return out
        if s.n_ff:
            return self.dense(x, s.n_ff, t, dev)
        return x

    def _copy(self) -> Tensor | None:
        """The next host weight copied in for a matmul: a split input, allocated at the
        start of the matmul's own split (right before it) and freed after it."""
        if not self._copies:
            return None
        size, dev = self._copies.pop(0)
        return self.g.copy(size, dev, self.tokens, weight=True)

    def start_copies(self, s: LayerShape) -> None:
        """Host-resident weights the scheduler copies in when a GPU runs the layer's
        matmuls for a prompt batch (op offload): one per matmul's split."""
        self._copies = [(s.offload_copy, s.device)] * 3 if s.offload_copy else []

    def dense(self, x: Tensor, n_ff: int, t: int, dev: str) -> Tensor:
        g = self.g
        gate = g.op(n_ff * t * F32, dev, x, self._copy())
        up = g.op(n_ff * t * F32, dev, x, self._copy())
        par = g.op(n_ff * t * F32, dev, gate, up)          # swiglu (not in place)
        return g.op(self.p.n_embd * t * F32, dev, par, self._copy())

    def build(self, layers: tuple[LayerShape, ...], with_output: bool) -> Graph:
        g, p = self.g, self.p
        inp = g.op(p.n_embd * p.n_tokens * F32, p.input_device, self.tokens)  # get_rows
        if p.mtp:  # concat(enorm(embd), hnorm(h)) -> eh_proj
            dev = layers[0].device if layers else p.input_device
            e_norm = self.norm(self.move(inp, dev), dev)
            h_norm = self.norm(g.input(p.n_embd * p.n_tokens * F32, dev), dev)
            cat = g.op(2 * p.n_embd * p.n_tokens * F32, dev, e_norm, h_norm)
            inp = g.op(p.n_embd * p.n_tokens * F32, dev, cat)
        for i, s in enumerate(layers):
            dev = s.device
            inp = self.move(inp, dev)
            self.start_copies(s)
            self._norm_copies = bool(s.attn_copy)
            cur = self.norm(inp, dev)
            g.expand(cur)
            last = i == len(layers) - 1 and with_output and not p.late_rows
            rows = None  # the residual's output rows: they read only the block's input, so
            # a reordering backend runs them as early as their split allows: before
            # attention, or (a host block run by the device, a split per copied weight)
            # right after the output projection. It looks 20 nodes ahead: a gated
            # attention's extra nodes put them out of its reach
            if (last and dev in p.reorder_devices and s.kind == "attn"
                    and not s.gated_attn):
                rows = g.op(p.n_embd * p.n_outputs * F32, dev, inp, self.inp("out_ids", dev))
            cur = self.recurrent(cur, s) if s.kind == "recurrent" else self.attention(
                cur, s, None if s.kv_host_k else rows)
            if rows is not None and s.kv_host_k:
                g.expand(cur)
                g.expand(rows)
            t = p.n_tokens
            if last:
                out_ids = self.inp("out_ids", dev)
                cur = g.op(p.n_embd * p.n_outputs * F32, dev, cur, out_ids)
                inp = rows or g.op(p.n_embd * p.n_outputs * F32, dev, inp, out_ids)
                t = p.n_outputs
            if s.delta_inner:  # the projection comes reshaped: the residual's sum goes
                cur = g.view(cur)  # in place on the block's input instead
            hidden = p.n_embd * t * F32
            if s.post_norms:
                cur = self.norm(cur, dev, cur.size or hidden)
            res = g.op(cur.size or hidden, dev, cur, inp, inplace=True)  # + residual
            cur = self.ffn(self.norm(res, dev), s, t)
            while self._copies:  # copies no matmul took (a block without an FFN)
                cur = g.op(cur.size, dev, cur, self._copy(), inplace=True)
            if s.post_norms:
                cur = self.norm(cur, dev)
            inp = g.op(cur.size, dev, cur, res, inplace=True)
        self._norm_copies = False
        if with_output and p.late_rows:
            g.mark_output(inp)                              # t_h_nextn is kept
            inp = g.op(p.n_embd * p.n_outputs * F32, inp.device, inp,
                       self.inp("out_ids", inp.device))     # get_rows(out_ids)
        if with_output:
            size, head_dev = p.n_vocab * p.n_outputs * F32, p.output_device
            # an op whose result is too large for the device's kernels runs on the CPU:
            # a device's head weight and the normed hidden state are copied to the host
            too_big = size > dict(p.op_limits).get(head_dev, size)
            copy = None
            if p.output_copy and not too_big:  # a host head weight copied in (op offload)
                copy = g.copy(p.output_copy, p.output_device, self.tokens, weight=True)
            self._norm_copies = bool(p.output_copy)  # ... and the output norm's weight
            out = self.norm(self.move(inp, p.output_device), p.output_device)
            self._norm_copies = False
            g.mark_output(out)                              # t_embd is kept
            if too_big:
                head_dev = "host"
                if p.output_weight and not p.output_copy:
                    copy = g.op(p.output_weight, head_dev, out)
                out = self.move(out, head_dev)
            logits = g.op(size, head_dev, out, copy)
            g.mark_output(logits)
            g.expand(logits)
        else:
            g.expand(inp)
        return g


@lru_cache(maxsize=4096)
def compute_bytes(layers: tuple[LayerShape, ...], params: GraphParams,
                  with_output: bool = True) -> tuple[tuple[str, int], ...]:
    """Compute-buffer bytes per device for the worst-case graph of ``layers``.

    Returns ``(device, bytes)`` pairs for every device that holds part of the graph.
    """
    graph = _Builder(params, layers).build(layers, with_output)
    return tuple(sorted(graph.allocate().items()))
