"""KV geometry rules per architecture: which layers are windowed, recurrent or MLA."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gguf import GGUFWriter

from planner.errors import UnsupportedModelError
from planner.gguf import read_profile
from planner.profile import ModelProfile
from tests.helpers.gguf_factory import write_gguf


def arch_profile(tmp_path: Path, arch: str, kv: dict[str, Any], n_layers: int = 4,
                 n_embd: int = 64, block_count: int | None = None) -> ModelProfile:
    """A header-only model of ``arch`` with the given metadata (keys without the prefix)."""
    def fill(w: GGUFWriter) -> None:
        w.add_block_count(n_layers if block_count is None else block_count)
        w.add_embedding_length(n_embd)
        w.add_context_length(4096)
        for key, value in kv.items():
            full = f"{arch}.{key}"
            if isinstance(value, list):
                w.add_array(full, value)
            elif isinstance(value, bool):
                w.add_bool(full, value)
            else:
                w.add_uint32(full, value)

    tensors = [("token_embd.weight", (n_embd, 300), "F16")]
    tensors += [(f"blk.{i}.attn_norm.weight", (n_embd,), "F32") for i in range(n_layers)]
    path = write_gguf(tmp_path / f"{arch}.gguf", arch, tensors, fill, 300, header_only=True)
    data = path.read_bytes()
    return read_profile(lambda o, n: data[o:o + n], len(data))


def kinds(p: ModelProfile) -> list[str]:
    return [la.kind.value[0] for la in p.layers]  # f(ull) s(wa) r(ecurrent) n(extn)


HEADS = {"attention.head_count": 4, "attention.head_count_kv": 2}


def test_gpt_oss_alternates_window_and_full(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "gpt-oss", {**HEADS, "attention.sliding_window": 128})
    assert kinds(p) == ["s", "f", "s", "f"]
    assert p.layers[0].swa_window == 128


def test_cohere2moe_puts_the_dense_layer_first(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "cohere2moe", {**HEADS, "attention.sliding_window": 64},
                     n_layers=8)
    assert kinds(p) == ["f", "s", "s", "s", "f", "s", "s", "s"]


def test_explicit_window_pattern_array_wins(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "gemma3", {**HEADS, "attention.sliding_window": 512,
                                          "attention.sliding_window_pattern":
                                              [True, False, False, True]})
    assert kinds(p) == ["s", "f", "f", "s"]


def test_window_key_without_a_pattern_rule_means_no_window(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "phi3", {**HEADS, "attention.sliding_window": 2048})
    assert kinds(p) == ["f"] * 4


def test_mla_caches_one_latent_head_and_no_v(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "deepseek2", {
        "attention.head_count": 16, "attention.head_count_kv": 1,
        "attention.key_length": 576, "attention.value_length": 512,
        "attention.key_length_mla": 192, "attention.value_length_mla": 128,
        "attention.kv_lora_rank": 512, "rope.dimension_count": 64})
    la = p.layers[0]
    assert (la.n_head_kv, la.head_dim_k, la.head_dim_v) == (1, 576, 0)


def test_deepseek2_without_mla_keys_caches_k_and_v(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "deepseek2", {
        "attention.head_count": 16, "attention.head_count_kv": 16,
        "attention.key_length": 192, "attention.value_length": 128})
    la = p.layers[0]
    assert (la.n_head_kv, la.head_dim_k, la.head_dim_v) == (16, 192, 128)


def test_mamba2_keeps_conv_and_ssm_state_in_every_layer(tmp_path: Path) -> None:
    ssm = {"ssm.conv_kernel": 4, "ssm.inner_size": 256, "ssm.state_size": 128,
           "ssm.group_count": 1, "ssm.time_step_rank": 8}
    p = arch_profile(tmp_path, "mamba2", ssm)
    assert kinds(p) == ["r"] * 4
    assert p.layers[0].recurrent_state_bytes == 4 * (3 * (256 + 2 * 128) + 128 * 256)
    assert p.layers[0].n_head_kv == 0


def test_hybrid_with_zero_kv_heads_marks_those_layers_recurrent(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "jamba", {
        "attention.head_count": 4, "attention.head_count_kv": [0, 0, 0, 2],
        "ssm.conv_kernel": 4, "ssm.inner_size": 128, "ssm.state_size": 16})
    assert kinds(p) == ["r", "r", "r", "f"]
    assert p.layers[3].n_head_kv == 2 and p.layers[0].recurrent_state_bytes > 0


def test_rwkv_state_is_token_shift_plus_wkv(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "rwkv6", {"wkv.head_size": 64})
    assert kinds(p) == ["r"] * 4
    assert p.layers[0].recurrent_state_bytes == 4 * (2 * 64 + 64 * 64)


def test_lfm2_short_convolutions_hold_their_cache(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "lfm2", {"attention.head_count": 4,
                                        "attention.head_count_kv": [0, 2, 0, 2],
                                        "shortconv.l_cache": 3})
    assert kinds(p) == ["r", "f", "r", "f"]
    assert p.layers[0].recurrent_state_bytes == 4 * 64 * 2


def test_qwen3next_full_attention_every_interval(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "qwen3next", {**HEADS, "full_attention_interval": 2,
                                             "ssm.conv_kernel": 4, "ssm.inner_size": 64,
                                             "ssm.state_size": 16, "ssm.group_count": 2})
    assert kinds(p) == ["r", "f", "r", "f"]


def test_nextn_blocks_are_marked(tmp_path: Path) -> None:
    p = arch_profile(tmp_path, "glm4moe", {**HEADS, "nextn_predict_layers": 1})
    assert kinds(p) == ["f", "f", "f", "n"] and p.nextn_layers == 1


def test_absurd_block_count_is_unsupported(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedModelError, match="block_count"):
        arch_profile(tmp_path, "llama", HEADS, block_count=1 << 20)


@pytest.mark.parametrize("arch, kv", [
    ("mamba2", {"ssm.conv_kernel": 4, "ssm.inner_size": 256, "ssm.state_size": 128,
                "ssm.group_count": 1}),
    ("rwkv6", {"wkv.head_size": 64}),
    ("deepseek2", {"attention.head_count": 16, "attention.head_count_kv": 1,
                   "attention.key_length": 576, "attention.value_length": 512,
                   "attention.key_length_mla": 192, "attention.value_length_mla": 128}),
    ("gpt-oss", {**HEADS, "attention.sliding_window": 128}),
    ("lfm2", {"attention.head_count": 4, "attention.head_count_kv": [0, 2, 0, 2],
              "shortconv.l_cache": 3}),
])
def test_every_geometry_can_be_priced(tmp_path: Path, arch: str, kv: dict[str, Any]) -> None:
    from planner.memory import MemoryConfig, Placement, estimate, kv_layer_bytes

    p = arch_profile(tmp_path, arch, kv)
    for config in (MemoryConfig(n_ctx=4096), MemoryConfig(n_ctx=8192, n_seq=2,
                                                          flash_attn=True, type_k="q8_0")):
        host, gpu = estimate(p, config, Placement.all_on("gpu0", p.n_layers))
        assert gpu.kv_bytes == sum(kv_layer_bytes(p, la, config) for la in p.layers) > 0
        assert gpu.compute_bytes > 0 and host.weights_bytes == p.token_embd_bytes
    recurrent = [la for la in p.layers if la.kind.value == "recurrent"]
    if recurrent:  # a fixed state per sequence, whatever the context
        one = estimate(p, MemoryConfig(n_ctx=1024), Placement.all_on("host", p.n_layers))
        big = estimate(p, MemoryConfig(n_ctx=65536), Placement.all_on("host", p.n_layers))
        attn = sum(1 for la in p.layers if la.n_head_kv)
        assert (big[0].kv_bytes == one[0].kv_bytes) == (attn == 0)


def test_gpt_oss_expert_width_is_read_from_the_weight_not_its_bias(tmp_path: Path) -> None:
    from tests.helpers.gguf_factory import Shape
    from tests.helpers.gguf_gpt_oss import write_gpt_oss

    shape = Shape(n_layers=2, n_expert=8, n_expert_used=2, n_ff_exp=256)
    data = write_gpt_oss(tmp_path / "oss.gguf", shape, header_only=True).read_bytes()
    p = read_profile(lambda o, n: data[o:o + n], len(data))
    # each expert bias is (width, n_expert): read as a width it gave 8, and the compute
    # buffer of the experts' intermediates was priced 32x too narrow
    assert [la.n_ff_exp for la in p.layers] == [256, 256]
