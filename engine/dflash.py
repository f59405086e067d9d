"""Drafting with a DFlash block-diffusion drafter, as llama.cpp's ``draft-dflash`` does.

A DFlash drafter is a model of its own (architecture ``dflash``, ``draft_model_path``) in
a context of its own, linked to the target's context through ``ctx_other`` so that it
borrows the target's token embeddings and output head. It reads the *inputs* of some of
the target's layers (``dflash.target_layers``): the target context records them for every
token it decodes (``llama_set_embeddings_layer_inp``), and the drafter works in step:

- after every target decode the layer inputs of each decoded token (concatenated over the
  target layers) go to the drafter as an embedding batch at the token's position; the
  drafter fuses them (``fc``) and writes them into its own KV cache;
- to draft, the block ``[pending token, <mask> x k]`` is decoded at the positions after the
  cache in one pass, with non-causal attention over the cache and the block; the argmax at
  each mask is a draft; the block's cells are dropped afterwards;
- after verification the cells past the kept tokens are dropped (they held the layer
  inputs of rejected drafts).

Only plain DFlash is driven here: DFlash2 (a selector lattice) and DSpark (a Markov head)
read their drafts differently and are refused by name.
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path
from typing import Any

import numpy as np

from engine.draft_model import draft_spec, vocab_mismatch
from engine.errors import EngineError
from engine.gguf_file import load_profile
from engine.launch import LaunchSpec
from engine.native.context import NativeContext
from engine.native.logits import LogitsRows
from engine.native.model import NativeModel, llama
from engine.native.side_context import SideContext
from engine.speculative import Run

log = logging.getLogger(__name__)

DEFAULT_BLOCK = 16  # llama.cpp's block size when the drafter does not say
# architectures whose graph records its layer inputs in this llama.cpp build (any other
# target would abort in llama.cpp at the first decode that asks for them)
LAYER_INPUT_ARCHS = frozenset({
    "bailingmoe3", "deepseek4", "gemma4", "gpt-oss", "hunyuan_vl", "lfm2", "llama", "mimo2",
    "minimax-01", "minimax-m2", "muse-glimmer", "nanbeige", "nemotron_h", "qwen3", "qwen35",
    "qwen35moe", "qwen3moe", "qwen3next", "qwen4exp"})

# llama-ext.h functions that llama-cpp-python does not wrap; libllama exports them with
# C++ linkage, so they are bound by their mangled names
_EXT = {
    "set_layer_inp": ("_Z30llama_set_embeddings_layer_inpP13llama_contextjb",
                      [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_bool], None),
    "get_layer_inp": ("_Z30llama_get_embeddings_layer_inpP13llama_contextj",
                      [ctypes.c_void_p, ctypes.c_uint32], ctypes.POINTER(ctypes.c_float)),
    "layer_ids": ("_Z28llama_model_target_layer_idsPK11llama_model",
                  [ctypes.c_void_p], ctypes.POINTER(ctypes.c_int32)),
    "layer_ids_n": ("_Z30llama_model_target_layer_ids_nPK11llama_model",
                    [ctypes.c_void_p], ctypes.c_uint32),
    "selector_top_k": ("_Z33llama_model_dflash_selector_top_kPK11llama_model",
                       [ctypes.c_void_p], ctypes.c_int32),
}
_bound: dict[str, Any] = {}


def ext(name: str) -> Any:
    """One of the unwrapped llama-ext functions, bound once."""
    if name not in _bound:
        import llama_cpp.llama_cpp as raw

        symbol, argtypes, restype = _EXT[name]
        func = getattr(raw._lib, name if hasattr(raw._lib, name) else symbol)
        func.argtypes, func.restype = argtypes, restype
        _bound[name] = func
    return _bound[name]


def dflash_refusal(target: NativeModel, drafter: NativeModel, layers: list[int],
                   tensor_names: set[str]) -> str | None:
    """Why this drafter cannot draft for this target (None when it can)."""
    arch = drafter.meta("general.architecture")
    if arch != "dflash":
        return f"it is a {arch} model, not a DFlash drafter"
    if int(ext("selector_top_k")(drafter.ptr)) > 0:
        return "it is a DFlash2 drafter (a selector lattice), which Loadout does not drive"
    if "markov_w1.weight" in tensor_names or drafter.meta("dflash.hyper_connection.count"):
        return "it is a DSpark drafter (a Markov head), which Loadout does not drive"
    target_arch = target.meta("general.architecture") or "?"
    if target_arch not in LAYER_INPUT_ARCHS:
        return f"llama.cpp cannot hand a {target_arch} model's layer inputs to a drafter"
    lib = llama()
    n_layer = int(lib.llama_model_n_layer(target.ptr))
    if not layers or any(not 0 <= i < n_layer for i in layers):
        return f"it reads layers {layers} of a target with {n_layer}"
    if int(lib.llama_model_n_embd(drafter.ptr)) != int(lib.llama_model_n_embd(target.ptr)):
        return "its width differs from the target's"
    why = vocab_mismatch(target, drafter)
    if why is not None:
        return f"their vocabularies differ ({why})"
    if int(lib.llama_vocab_mask(drafter.vocab)) < 0:
        return "it has no mask token"
    return None


class DFlashDrafter(SideContext):
    """A DFlash drafter beside the target (mode ``"dflash"``); :meth:`free` releases it.

    Raises:
        EngineError: the drafter does not fit the target (the message says why).
        ModelLoadError and its kin: the drafter or its context cannot be loaded.
    """

    mode = "dflash"

    def __init__(self, target_model: NativeModel, target: NativeContext,
                 spec: LaunchSpec) -> None:
        dspec = draft_spec(spec)
        self.model = NativeModel(dspec)
        lib = llama()
        try:
            n = int(ext("layer_ids_n")(self.model.ptr))
            ids = ext("layer_ids")(self.model.ptr)
            self.layers = [int(ids[i]) for i in range(n)]
            names = {t.name for t in load_profile(dspec.model_path).tensors}
            why = dflash_refusal(target_model, self.model, self.layers, names)
            if why is not None:
                raise EngineError(f"{Path(dspec.model_path).name} cannot draft for "
                                  f"{Path(spec.model_path).name}: {why}")
            # ctx_other: the target's embeddings and output head
            self._open(self.model.ptr, dspec, f"the context of {Path(dspec.model_path).name}",
                       ctx_other=target.ptr)
        except BaseException:
            self.model.free()
            raise
        self.target = target
        self.n_embd = int(lib.llama_model_n_embd(target_model.ptr))
        self.n_vocab = self.model.n_vocab
        self.greedy = LogitsRows(self.n_vocab)
        self.mask = int(lib.llama_vocab_mask(self.model.vocab))
        self.block = int(self.model.meta("dflash.block_size") or DEFAULT_BLOCK)
        causal = self.model.meta("dflash.attention.causal") == "true"
        lib.llama_set_causal_attn(self.ptr, causal)
        for layer in self.layers:
            ext("set_layer_inp")(target.ptr, layer, True)
        log.info("DFlash drafting with %s: target layers %s, block %d",
                 self.model.description(), self.layers, self.block)

    # -- the drafter's own cache ------------------------------------------------------
    def _held(self, seq: int) -> int:
        return int(llama().llama_memory_seq_pos_max(self.memory, seq)) + 1

    def _process(self) -> int:
        lib = llama()
        return int(lib.llama_process(self.ptr, lib.LLAMA_PROCESS_TYPE_DECODE, self.batch))

    def _add(self, seq: int, pos: int, token: int | None = None,
             row: np.ndarray | None = None, output: bool = False) -> None:
        lib = llama()
        if row is not None:
            embd = lib.llama_embd(row.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), 1,
                                  row.shape[0])
            idx = lib.llama_batch_ext_add_embd(self.batch, seq, embd)
        else:
            idx = lib.llama_batch_ext_add_token(self.batch, seq, token)
        if idx < 0:
            raise EngineError(f"the DFlash batch refused an entry ({idx})")
        at = (ctypes.c_int32 * 4)(pos, pos, pos, 0)
        lib.llama_batch_ext_set_pos(self.batch, idx, at)
        if output:
            lib.llama_batch_ext_set_output_logits(self.batch, idx, True)

    # -- the drafter ------------------------------------------------------------------
    def admit(self, seq: int, reuse: int) -> int:
        """Keep the cells of the first ``reuse`` positions that the cache holds."""
        reuse = min(reuse, self._held(seq))
        return reuse if self._seq_rm(seq, reuse) else 0

    def decoded(self, n_tokens: int, runs: list[Run]) -> None:
        """Write the target's layer inputs of the just-decoded tokens into the cache."""
        if not runs:
            return
        inputs = [np.ctypeslib.as_array(ext("get_layer_inp")(self.target.ptr, layer),
                                        shape=(n_tokens, self.n_embd))
                  for layer in self.layers]
        rows = np.ascontiguousarray(np.concatenate(inputs, axis=1), dtype=np.float32)
        llama().llama_batch_ext_clear(self.batch)
        for run in runs:
            for k in range(len(run.tokens)):
                self._add(run.seq, run.pos + k, row=rows[run.index + k])
        status = self._process()  # ``rows`` stays alive until here: the batch points in
        if status != 0:
            log.warning("the DFlash drafter could not follow a decode (status %d)", status)
            for run in runs:
                self._seq_rm(run.seq, run.pos)

    def draft(self, seq: int, tokens: list[int], k: int) -> list[int]:
        """Up to ``k`` tokens (at most a block) from one pass over ``[last, <mask> x k]``."""
        pos0 = len(tokens) - 1
        k = min(k, self.block - 1)
        if k < 1 or self._held(seq) != pos0:
            return []  # the cache is not in step with this sequence
        lib = llama()
        lib.llama_batch_ext_clear(self.batch)
        self._add(seq, pos0, token=tokens[-1])
        for i in range(1, k + 1):
            self._add(seq, pos0 + i, token=self.mask, output=True)
        out: list[int] = []
        if self._process() == 0:
            for i in range(1, k + 1):
                out.append(self.greedy.argmax(self.ptr, i))
        self._seq_rm(seq, pos0)  # the block's cells: verification brings the real ones
        return out

    def rollback(self, seq: int, keep: int, row: int) -> None:
        """Drop the cells past ``keep`` (the layer inputs of rejected drafts)."""
        self._seq_rm(seq, keep)

    def free(self) -> None:
        """Release the batch, context and model; idempotent."""
        if self._close():
            self.model.free()
