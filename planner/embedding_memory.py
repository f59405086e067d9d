"""The memory of an embedding context: the second llama.cpp context ``/v1/embeddings`` runs.

An embedding model (pooling declared, or non-causal attention like BERT) is served by that
context alone; a chat model served with ``--embeddings`` has it beside its chat context,
over the same weights. Its shape is fixed by the engine (:mod:`engine.embedder`): one
batch of ``n_batch`` tokens (the longest input, at least ``ENCODE_TOKENS``, at most
``MAX_INPUT_TOKENS``) is also its micro-batch and its whole cache, shared by
``MAX_SEQUENCES`` sequences, flash attention where llama.cpp has it (``auto``).

What llama.cpp allocates for it (``bench/memory_accuracy.py``, ``embed`` rows):

- a causal model: the KV cache and compute buffers of that context, as for any context
  (:func:`planner.memory.estimate`: its graph still computes the output head for every
  token of the micro-batch);
- an encoder (non-causal, no KV cache): a compute buffer of the f16 attention mask
  (``n_batch`` squared) and, per token, the feed-forward activation, three hidden-state
  wide activations and the mean-pooling row (one float per sequence), in f32;
- the output buffer, in host memory: f32 logits and an embedding for one output per
  sequence.

Pure arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.memory import F32_BYTES, HOST, DeviceMemory, MemoryConfig, Placement, estimate
from planner.profile import ModelProfile

MAX_SEQUENCES = 64        # sequences (inputs) of one encode
ENCODE_TOKENS = 512       # the smallest batch; encodes pack inputs up to it
MAX_INPUT_TOKENS = 8192   # the longest input, whatever the model's context
F16_BYTES = 2


def is_encoder(profile: ModelProfile) -> bool:
    """Non-causal attention (BERT and kin): llama.cpp gives it no KV cache."""
    return profile.meta(f"{profile.architecture}.attention.causal").lower() in ("false", "0")


def is_embedding_model(profile: ModelProfile) -> bool:
    """A model made to embed: pooling declared, or an encoder (as the engine decides)."""
    return is_encoder(profile) or profile.meta(f"{profile.architecture}.pooling_type") != ""


def embedding_batch(max_input_tokens: int) -> int:
    """Tokens of the embedding context's batch (= micro-batch = cache) for inputs of at
    most ``max_input_tokens``."""
    return max(ENCODE_TOKENS, min(max_input_tokens, MAX_INPUT_TOKENS))


def output_bytes(profile: ModelProfile) -> int:
    """The embedding context's output buffer: logits and an embedding per sequence."""
    return (profile.n_vocab + profile.n_embd) * MAX_SEQUENCES * F32_BYTES


def encoder_compute_bytes(profile: ModelProfile, n_batch: int) -> int:
    """An encoder's compute buffer for one batch of ``n_batch`` tokens (flash attention)."""
    n_ff = max((la.n_ff for la in profile.layers), default=4 * profile.n_embd)
    per_token = (n_ff + 3 * profile.n_embd + MAX_SEQUENCES) * F32_BYTES
    return n_batch * n_batch * F16_BYTES + n_batch * per_token


@dataclass(frozen=True)
class EmbeddingContext:
    """An embedding context's shape.

    Attributes:
        n_batch: tokens of its batch, micro-batch and cache (see :func:`embedding_batch`).
        type_k / type_v: its KV cache types (the chat context's: the engine shares them).
        offload_kqv: its cache on the layers' devices (else in host RAM).
    """

    n_batch: int
    type_k: str = "f16"
    type_v: str = "f16"
    offload_kqv: bool = True

    def config(self) -> MemoryConfig:
        """The llama.cpp context configuration the engine creates."""
        return MemoryConfig(n_ctx=self.n_batch, n_seq=MAX_SEQUENCES, type_k=self.type_k,
                            type_v=self.type_v, flash_attn=True, n_batch=self.n_batch,
                            n_ubatch=self.n_batch, offload_kqv=self.offload_kqv,
                            kv_unified=True)


def embedding_memory(profile: ModelProfile, context: EmbeddingContext,
                     placement: Placement) -> tuple[DeviceMemory, ...]:
    """Bytes per device the embedding context adds to the loaded model (no weights: they
    are the model's), host first."""
    if is_encoder(profile):
        layers = [d for d in placement.layer_devices if d != HOST]
        device = layers[-1] if layers else HOST
        compute = encoder_compute_bytes(profile, context.n_batch)
        out = [DeviceMemory(HOST, 0, 0, compute if device == HOST else 0,
                            output_bytes(profile), 0)]
        if device != HOST:
            out.append(DeviceMemory(device, 0, 0, compute, 0, 0))
        return tuple(out)
    return tuple(DeviceMemory(d.device, 0, d.kv_bytes, d.compute_bytes,
                              output_bytes(profile) if d.device == HOST else 0, 0)
                 for d in estimate(profile, context.config(), placement))
