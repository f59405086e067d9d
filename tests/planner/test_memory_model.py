"""The memory model, against llama.cpp's sizing rules worked out by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from planner.gguf import read_profile
from planner.memory import (
    GPU_OVERHEAD_BYTES,
    DeviceMemory,
    MemoryConfig,
    Placement,
    context_size,
    estimate,
    kv_bytes_per_cell,
    kv_layer_bytes,
)
from planner.profile import LayerKind, ModelProfile, TensorKind
from tests.helpers.gguf_factory import (
    Shape,
    write_gemma3,
    write_llama,
    write_qwen3moe,
    write_qwen35,
)

S = Shape()  # the default tiny llama: 2 layers, 2 KV heads of 16


def _profile(path: Path) -> ModelProfile:
    data = path.read_bytes()
    return read_profile(lambda o, n: data[o:o + n], len(data))


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModelProfile]:
    d = tmp_path_factory.mktemp("mem")
    return {
        "llama": _profile(write_llama(d / "l.gguf", header_only=True)),
        "moe": _profile(write_qwen3moe(d / "m.gguf", header_only=True)),
        "moe_big": _profile(write_qwen3moe(d / "mb.gguf", Shape(
            n_embd=256, n_expert=8, n_expert_used=2, n_ff_exp=2048), header_only=True)),
        "gemma3": _profile(write_gemma3(d / "g.gguf", header_only=True)),
        "qwen35": _profile(write_qwen35(d / "q.gguf", header_only=True)),
    }


def host(profile: ModelProfile, config: MemoryConfig) -> DeviceMemory:
    """The host's share when everything runs on the CPU."""
    return estimate(profile, config, Placement.all_on("host", profile.n_layers))[0]


def test_kv_cache_is_cells_times_layers_times_kv_width(models: dict[str, ModelProfile]) -> None:
    kv = host(models["llama"], MemoryConfig(n_ctx=4096)).kv_bytes
    assert kv == 4096 * S.n_layers * (S.n_head_kv * S.head_dim) * 2 * 2  # K and V, f16


def test_context_is_padded_to_256_and_split_per_sequence() -> None:
    assert context_size(MemoryConfig(n_ctx=1000)).n_ctx == 1024
    four = context_size(MemoryConfig(n_ctx=4096, n_seq=4))
    assert (four.n_ctx_seq, four.n_stream, four.n_ctx) == (1024, 4, 4096)
    odd = context_size(MemoryConfig(n_ctx=1000, n_seq=3))
    assert (odd.n_ctx_seq, odd.n_ctx) == (512, 1536)  # pad(1024 / 3) per sequence
    unified = context_size(MemoryConfig(n_ctx=4096, n_seq=4, kv_unified=True))
    assert (unified.n_ctx_seq, unified.n_stream) == (4096, 1)


def test_quantized_kv_costs_its_block_size(models: dict[str, ModelProfile]) -> None:
    q8 = host(models["llama"], MemoryConfig(n_ctx=4096, type_k="q8_0", type_v="q8_0",
                                            flash_attn=True)).kv_bytes
    assert q8 == 4096 * S.n_layers * 2 * (32 // 32 * 34)  # one q8_0 block per 32-wide row
    q4k = host(models["llama"], MemoryConfig(n_ctx=4096, type_k="q4_0", flash_attn=True))
    assert q4k.kv_bytes == 4096 * S.n_layers * (18 + 64)  # q4_0 K, f16 V


def test_sliding_window_layers_cap_at_window_plus_batch(models: dict[str, ModelProfile]) -> None:
    g = models["gemma3"]
    width = S.n_head_kv * S.head_dim * 2 * 2  # K+V f16 bytes per cell
    kv = host(g, MemoryConfig(n_ctx=16384)).kv_bytes
    assert kv == (5 * 768 + 1 * 16384) * width  # pad(256 + 512) cells on SWA layers
    full = host(g, MemoryConfig(n_ctx=16384, swa_full=True)).kv_bytes
    assert full == 6 * 16384 * width
    par = host(g, MemoryConfig(n_ctx=16384, n_seq=4)).kv_bytes
    assert par == (5 * 768 * 4 + 16384) * width  # one window per sequence


def test_recurrent_state_is_per_sequence_not_per_token(models: dict[str, ModelProfile]) -> None:
    q = models["qwen35"]
    state = q.layers[0].recurrent_state_bytes
    attn_width = S.n_head_kv * S.head_dim * 2 * 2
    small = host(q, MemoryConfig(n_ctx=4096)).kv_bytes
    assert small == 3 * state + 4096 * attn_width  # 3 recurrent layers, 1 attention layer
    par = host(q, MemoryConfig(n_ctx=4096, n_seq=4)).kv_bytes
    assert par == 3 * state * 4 + 4096 * attn_width


def test_mtp_layers_cost_only_when_loaded(models: dict[str, ModelProfile]) -> None:
    q = models["qwen35"]
    off = host(q, MemoryConfig(n_ctx=4096))
    on = host(q, MemoryConfig(n_ctx=4096, load_mtp=True))
    nextn = q.layers[-1]
    assert nextn.kind == LayerKind.NEXTN
    assert on.weights_bytes - off.weights_bytes == nextn.total_bytes > 0
    assert on.kv_bytes - off.kv_bytes == 4096 * S.n_head_kv * S.head_dim * 2 * 2
    # the draft context has its own output head and output buffer
    assert on.compute_bytes - off.compute_bytes >= 512 * S.n_vocab * 4
    assert on.output_bytes == 2 * off.output_bytes


def test_output_buffer_is_one_logit_row_per_sequence(models: dict[str, ModelProfile]) -> None:
    llama = models["llama"]
    assert host(llama, MemoryConfig(n_ctx=512)).output_bytes == S.n_vocab * 4
    assert host(llama, MemoryConfig(n_ctx=512, n_seq=4)).output_bytes == S.n_vocab * 4 * 4


def test_weights_follow_the_placement(models: dict[str, ModelProfile]) -> None:
    m = models["moe"]
    placement = Placement(("gpu0", "gpu1"), ("host", "gpu1"), output_device="gpu1")
    devs = {d.device: d for d in estimate(m, MemoryConfig(n_ctx=4096), placement)}
    l0, l1 = m.layers
    experts0 = l0.bytes_of(TensorKind.EXPERTS)
    assert devs["host"].weights_bytes == m.token_embd_bytes + m.other_bytes + experts0
    assert devs["gpu0"].weights_bytes == l0.total_bytes - experts0
    assert devs["gpu1"].weights_bytes == l1.total_bytes + m.output_bytes
    assert sum(d.weights_bytes for d in devs.values()) == m.weights_bytes
    assert devs["gpu0"].overhead_bytes == GPU_OVERHEAD_BYTES and devs["host"].overhead_bytes == 0
    per_layer_kv = 4096 * S.n_head_kv * S.head_dim * 2 * 2
    assert devs["gpu0"].kv_bytes == devs["gpu1"].kv_bytes == per_layer_kv
    assert devs["host"].kv_bytes == 0


def test_kv_stays_in_host_memory_without_offload(models: dict[str, ModelProfile]) -> None:
    m = models["llama"]
    devs = estimate(m, MemoryConfig(n_ctx=4096, offload_kqv=False),
                    Placement.all_on("gpu0", m.n_layers))
    assert devs[0].device == "host" and devs[0].kv_bytes > 0 and devs[1].kv_bytes == 0


def test_tied_output_is_copied_to_a_gpu_output_device(models: dict[str, ModelProfile]) -> None:
    g = models["gemma3"]
    assert g.tied_output
    gpu = estimate(g, MemoryConfig(n_ctx=4096), Placement.all_on("gpu0", g.n_layers))[1]
    layers = sum(la.total_bytes for la in g.layers)
    assert gpu.weights_bytes == layers + g.output_bytes + g.token_embd_bytes


def test_compute_without_flash_attention_holds_the_kq_matrix(
        models: dict[str, ModelProfile]) -> None:
    m = models["llama"]
    small = host(m, MemoryConfig(n_ctx=4096)).compute_bytes
    big = host(m, MemoryConfig(n_ctx=16384)).compute_bytes
    kq_growth = (16384 - 4096) * 512 * S.n_head * 4
    assert big - small >= kq_growth  # plus the mask, which grows too
    flash_small = host(m, MemoryConfig(n_ctx=4096, flash_attn=True)).compute_bytes
    flash_big = host(m, MemoryConfig(n_ctx=16384, flash_attn=True)).compute_bytes
    mask_growth = (16384 - 4096) * 512 * 2  # the f16 mask is all that grows
    assert mask_growth <= flash_big - flash_small < mask_growth * 1.1 < kq_growth


def test_compute_scales_with_the_micro_batch(models: dict[str, ModelProfile]) -> None:
    m = models["llama"]
    logits = S.n_vocab * 4
    c512 = host(m, MemoryConfig(n_ctx=4096, flash_attn=True, n_ubatch=512)).compute_bytes
    c128 = host(m, MemoryConfig(n_ctx=4096, flash_attn=True, n_ubatch=128)).compute_bytes
    assert c512 > c128
    assert c512 >= max(512 * logits, 4096 * 512 * 2)  # logit rows; the f16 mask
    assert c128 >= max(128 * logits, 4096 * 128 * 2)


def test_kv_bytes_per_cell_matches_full_layers(models: dict[str, ModelProfile]) -> None:
    llama = models["llama"]
    assert kv_bytes_per_cell(llama) == S.n_layers * S.n_head_kv * S.head_dim * 2 * 2
    gemma = models["gemma3"]
    assert kv_bytes_per_cell(gemma, "q8_0", "q8_0") == 2 * 34  # only the global layer


def test_estimate_is_deterministic(models: dict[str, ModelProfile]) -> None:
    q = models["qwen35"]
    config = MemoryConfig(n_ctx=8192, n_seq=2, type_k="q8_0", type_v="q8_0", flash_attn=True)
    assert host(q, config) == host(q, config)


def test_experts_left_in_ram_are_copied_in_for_prompt_batches(
        models: dict[str, ModelProfile]) -> None:
    m = models["moe_big"]
    n = m.n_layers
    config = MemoryConfig(n_ctx=1024, flash_attn=True)
    on_gpu = estimate(m, config, Placement.all_on("gpu0", n))
    split = estimate(m, config, Placement(("gpu0",) * n, ("host",) * n, output_device="gpu0"))
    expert_tensor = m.layers[0].bytes_of(TensorKind.EXPERTS) // 3  # 8 MiB of f16
    # each copy lives from its matmul's split to the matmul: it may land in memory the
    # logits reuse later, but never lowers the peak by more than where the graph inputs'
    # small copies land (each at the start of the split that first reads it)
    assert split[1].compute_bytes >= on_gpu[1].compute_bytes - 64 * 1024
    assert split[1].compute_bytes >= expert_tensor
    # one copy at a time: a copy far larger than the graph's tensors is counted once
    from planner.compute_buffer import GraphParams, LayerShape, compute_bytes
    big = 256 << 20
    layer = LayerShape("attn", 4, 64, 64, 2, 1024, 0, n_ff_exp=64, n_expert=8,
                       n_expert_used=2, device="gpu0", offload_copy=big)
    params = GraphParams(n_tokens=512, n_outputs=512, n_embd=256, n_vocab=1000, n_seq=1,
                         n_stream=1, flash=True, k_rot=0, v_rot=0, v_trans_width=0,
                         output_device="gpu0")
    gpu = dict(compute_bytes((layer,), params))["gpu0"]
    assert big < gpu < big + (16 << 20)


def test_without_kv_offload_attention_runs_on_the_host(models: dict[str, ModelProfile]) -> None:
    m = models["llama"]
    devs = estimate(m, MemoryConfig(n_ctx=8192, offload_kqv=False),
                    Placement.all_on("gpu0", m.n_layers))
    kq = 8192 * 512 * S.n_head * 4
    assert devs[0].compute_bytes >= kq > devs[1].compute_bytes


def test_each_gpu_of_a_split_holds_its_share_of_the_graph(
        models: dict[str, ModelProfile]) -> None:
    m = models["llama"]
    devs = {d.device: d for d in estimate(
        m, MemoryConfig(n_ctx=4096, flash_attn=True),
        Placement(("gpu0", "gpu1"), ("gpu0", "gpu1"), output_device="gpu1"))}
    logits, mask = 512 * S.n_vocab * 4, 4096 * 512 * 2
    assert devs["gpu1"].compute_bytes >= logits + 512 * S.n_embd * 4  # logits + t_embd
    assert devs["gpu0"].compute_bytes >= mask  # each GPU gets its copy of the inputs
    assert devs["gpu1"].compute_bytes >= mask
    # the host keeps the graph inputs (the scheduler copies them from its buffer) and the
    # embedding rows, never the logits
    assert mask <= devs["host"].compute_bytes < mask + logits


def test_gpu_takes_the_prompt_matmuls_of_host_layers(models: dict[str, ModelProfile]) -> None:
    m = models["llama"]
    partial = Placement(("gpu0", "host"), ("gpu0", "host"), output_device="host")
    devs = {d.device: d for d in estimate(m, MemoryConfig(n_ctx=2048, flash_attn=True),
                                          partial)}
    logits = 512 * S.n_vocab * 4
    # op offload: the host output head runs on the GPU, with its weight copied in
    assert devs["gpu0"].compute_bytes >= logits + m.output_bytes
    mask = 2048 * 512 * 2
    assert devs["host"].compute_bytes < mask + 512 * S.n_embd * 4 * 8  # attention only


def test_kv_bytes_per_cell_defaults_to_the_memory_config_default(
        models: dict[str, ModelProfile]) -> None:
    llama = models["llama"]
    # one narrower layer: without flash attention its V row is as wide as the widest
    narrow = replace(llama, layers=(replace(llama.layers[0], n_head_kv=1), *llama.layers[1:]))
    config = MemoryConfig(n_ctx=4096)
    per_layer = sum(kv_layer_bytes(narrow, la, config) for la in narrow.layers)
    assert kv_bytes_per_cell(narrow) * context_size(config).n_ctx == per_layer
    flash = replace(config, flash_attn=True)
    per_layer_flash = sum(kv_layer_bytes(narrow, la, flash) for la in narrow.layers)
    assert kv_bytes_per_cell(narrow, flash_attn=True) * 4096 == per_layer_flash < per_layer


def test_placement_with_fewer_expert_devices_than_layers_is_refused(
        models: dict[str, ModelProfile]) -> None:
    with pytest.raises(ValueError, match="2 expert devices for 3 layers"):
        Placement(("gpu0",) * 3, ("host",) * 2)
    m = models["moe"]
    only_layers = Placement(("gpu0",) * m.n_layers, ())  # experts follow their layers
    both = Placement(("gpu0",) * m.n_layers, ("gpu0",) * m.n_layers)
    config = MemoryConfig(n_ctx=512)
    assert estimate(m, config, only_layers) == estimate(m, config, both)


def test_a_splits_copies_are_allocated_at_its_start_in_the_order_it_reads_them() -> None:
    from planner.graph_alloc import Graph, _split_order

    g = Graph()
    host_in, weight_src = g.input(64, "host"), g.input(64, "host")
    hidden = g.copy(128, "gpu0", host_in)                 # the hidden state, read first
    a = g.op(128, "gpu0", hidden)
    mask = g.copy(256, "gpu0", host_in)                   # a graph input read later ...
    b = g.op(128, "gpu0", a, mask)                        # ... in the same split
    weight = g.copy(512, "gpu0", weight_src, weight=True)
    c = g.op(128, "gpu0", b, weight)                      # a host weight: a new split
    g.expand(c)
    assert _split_order(g.nodes) == [hidden, mask, a, b, weight, c]


def test_the_host_buffer_holds_the_unused_embeddings_input(
        models: dict[str, ModelProfile]) -> None:
    m = models["llama"]
    config = MemoryConfig(n_ctx=4096, n_ubatch=512, flash_attn=True)
    on_gpu = estimate(m, config, Placement.all_on("gpu0", m.n_layers))
    host = next(d for d in on_gpu if d.device == "host")
    # llama.cpp's CPU backend allocates the batch's embeddings input even for tokens
    assert host.compute_bytes >= m.n_embd * 512 * 4


def test_a_reordering_backend_prices_the_device_buffer_as_it_runs_the_graph(
        models: dict[str, ModelProfile]) -> None:
    m = models["moe"]
    config = MemoryConfig(n_ctx=4096, n_ubatch=2048, flash_attn=True)
    split = Placement(("gpu0",) * m.n_layers, ("host",) * m.n_layers, "gpu0")
    plain = next(d for d in estimate(m, config, split) if d.device == "gpu0")
    vulkan = next(d for d in estimate(m, config, split, reorder_devices=("gpu0",))
                  if d.device == "gpu0")
    # the three projections run together, so the router and the expert matmuls find
    # other free memory: the same graph, another high-water mark
    assert vulkan.compute_bytes != plain.compute_bytes
