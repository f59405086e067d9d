"""A replay of ggml's graph allocator (``ggml/src/ggml-alloc.c``) over a tensor DAG.

Only what decides memory is kept: tensor sizes, which tensor reads which, views (no memory
of their own; they keep their source alive), ops that may run in place, graph inputs and
outputs, and the device whose buffer each tensor lives in. The allocation rules follow
``ggml_gallocr_alloc_graph_impl``: graph leaves (inputs) first, then each node in graph
order, in place on a parent nobody else reads, parents freed after their last reader,
best fit among free blocks else the tail (``ggml_dyn_tallocr_alloc``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALIGN = 32        # CPU buffers (TENSOR_ALIGNMENT)
GPU_ALIGN = 128   # CUDA / ROCm buffer types
_TAIL = 1 << 62


@dataclass(eq=False)
class Tensor:
    """One graph tensor (identity matters, not value)."""

    size: int
    device: str
    srcs: tuple[Tensor, ...] = ()
    inplace: bool = False          # op may reuse a parent's memory (ggml_op_can_inplace)
    view_of: Tensor | None = None  # root tensor whose memory a view aliases
    is_view: bool = False
    contiguous: bool = True        # a view with the same layout as its source, at offset 0
    is_input: bool = False
    is_output: bool = False
    # a copy the scheduler makes into a split's device (a graph input, a host weight, the
    # hidden state from another device): allocated at the start of the split that reads it
    copy_in: bool = False
    weight: bool = False           # ... of a weight (a node reading one may start a split)
    # allocator state
    n_children: int = field(default=0, repr=False)
    n_views: int = field(default=0, repr=False)
    allocated: bool = field(default=False, repr=False)
    offset: int = field(default=-1, repr=False)


class _Buffer:
    """ggml_dyn_tallocr for one device: a sorted free list whose last block is the tail."""

    def __init__(self, alignment: int = ALIGN) -> None:
        self.align = alignment
        self.blocks: list[list[int]] = [[0, _TAIL]]
        self.max_size = 0

    def alloc(self, size: int) -> int:
        size = _aligned(size, self.align)
        best, best_size = -1, _TAIL + 1
        blocks = self.blocks
        for i in range(len(blocks) - 1):
            bsize = blocks[i][1]
            if size <= bsize <= best_size:
                best, best_size = i, bsize
        if best < 0:
            best = len(blocks) - 1
        block = blocks[best]
        offset = block[0]
        block[0] += size
        block[1] -= size
        if block[1] == 0:
            del blocks[best]
        self.max_size = max(self.max_size, offset + size)
        return offset

    def free(self, offset: int, size: int) -> None:
        size = _aligned(size, self.align)
        blocks = self.blocks
        i = 0
        while i < len(blocks) and blocks[i][0] < offset:
            i += 1
        merged_left = i > 0 and blocks[i - 1][0] + blocks[i - 1][1] == offset
        merged_right = i < len(blocks) and offset + size == blocks[i][0]
        if merged_left and merged_right:
            blocks[i - 1][1] += size + blocks[i][1]
            del blocks[i]
        elif merged_left:
            blocks[i - 1][1] += size
        elif merged_right:
            blocks[i][0] = offset
            blocks[i][1] += size
        else:
            blocks.insert(i, [offset, size])


class Graph:
    """Build a DAG the way llama.cpp builds its ggml graph, then size its buffers."""

    def __init__(self) -> None:
        self.nodes: list[Tensor] = []
        self.leafs: list[Tensor] = []
        self._seen: set[int] = set()

    def input(self, size: int, device: str) -> Tensor:
        """A graph input (``ggml_set_input``): allocated before everything else."""
        return Tensor(size, device, is_input=True)

    def op(self, size: int, device: str, *srcs: Tensor | None, inplace: bool = False) -> Tensor:
        """A computed tensor of ``size`` bytes reading ``srcs``."""
        return Tensor(size, device, tuple(s for s in srcs if s is not None), inplace=inplace)

    def copy(self, size: int, device: str, src: Tensor, weight: bool = False) -> Tensor:
        """``src`` copied into ``device``'s buffer by the scheduler (a split input)."""
        return Tensor(size, device, (src,), copy_in=True, weight=weight)

    def view(self, src: Tensor | None, *extra: Tensor | None,
             contiguous: bool = True) -> Tensor:
        """A view of ``src`` (None: of an external tensor such as the KV cache)."""
        root = None if src is None else (src.view_of or src)
        if root is not None and root.view_of is None and root.is_view:
            root = None  # a view of an external tensor
        srcs = tuple(s for s in (src, *extra) if s is not None)
        return Tensor(0, src.device if src else "host", srcs, view_of=root, is_view=True,
                      contiguous=contiguous)

    def mark_output(self, t: Tensor) -> None:
        """Flag a graph output (never freed, never reused in place)."""
        t.is_output = True

    def expand(self, t: Tensor) -> None:
        """ggml_build_forward_expand: add ``t`` and its ancestors, depth first."""
        stack: list[tuple[Tensor, int]] = [(t, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                if id(node) in self._seen:
                    continue
                self._seen.add(id(node))
            if i < len(node.srcs):
                stack.append((node, i + 1))
                stack.append((node.srcs[i], 0))
                continue
            is_leaf = not node.srcs and not node.is_view
            (self.leafs if is_leaf else self.nodes).append(node)

    def allocate(self) -> dict[str, int]:
        """Run the allocator; return each device's high-water mark in bytes."""
        buffers: dict[str, _Buffer] = {}

        def buf(dev: str) -> _Buffer:
            if dev not in buffers:
                buffers[dev] = _Buffer(ALIGN if dev == "host" else GPU_ALIGN)
            return buffers[dev]

        def allocate(t: Tensor) -> None:
            if t.allocated or t.is_view or t.offset >= 0:
                return
            t.allocated = True
            if t.inplace:
                # only a parent the allocator placed itself qualifies (ggml_gallocr_is_own):
                # views never do, so ops on a reshaped tensor always get new memory
                for p in t.srcs:
                    if (not p.is_view and p.allocated and not p.is_output
                            and p.device == t.device and p.n_children == 1
                            and p.n_views == 0 and p.size == t.size):
                        take(t, p)
                        return
            t.offset = buf(t.device).alloc(t.size)

        def take(t: Tensor, p: Tensor) -> None:
            t.offset = p.offset
            p.allocated = False
            align = buf(t.device).align
            used, have = _aligned(t.size, align), _aligned(p.size, align)
            if have > used:  # ggml_gallocr_free_extra_space
                buf(t.device).free(p.offset + used, have - used)

        def free(t: Tensor) -> None:
            if t.is_output or not t.allocated:
                return
            buf(t.device).free(t.offset, t.size)
            t.allocated = False

        self.nodes = _split_order(self.nodes)
        for leaf in self.leafs:
            if leaf.is_input:
                allocate(leaf)
        for node in self.nodes:
            if node.is_view and node.view_of is not None:
                node.view_of.n_views += 1
            for s in node.srcs:
                s.n_children += 1
        for node in self.nodes:
            for src in node.srcs:
                if src.is_input:
                    allocate(src)
            allocate(node)
            for p in node.srcs:
                p.n_children -= 1
                if p.n_children == 0 and p.n_views == 0:
                    if p.is_view:
                        root = p.view_of
                        if root is not None:
                            root.n_views -= 1
                            if root.n_views == 0 and root.n_children == 0:
                                free(root)
                    else:
                        free(p)
        return {dev: _aligned(b.max_size, b.align) for dev, b in buffers.items()}


def _split_order(nodes: list[Tensor]) -> list[Tensor]:
    """The node order ggml's scheduler hands the allocator: the graph cut into splits
    (a new one where the device changes, or where a node reads a host weight and the
    split already has inputs), each split's copies first in the order its nodes read
    them (``ggml_backend_sched_split_graph``)."""
    out: list[Tensor] = []
    pending: list[Tensor] = []
    device, start, n_inputs = "", 0, 0
    for node in nodes:
        if node.copy_in:
            pending.append(node)
            continue
        if node.is_view:
            out.append(node)
            continue
        if node.device != device or (n_inputs and any(c.weight for c in pending)):
            device, start, n_inputs = node.device, len(out), 0
        for c in pending:
            out.insert(start + n_inputs, c)
            n_inputs += 1
        pending.clear()
        out.append(node)
    return out + pending


def _aligned(n: int, align: int = ALIGN) -> int:
    return -(-n // align) * align
