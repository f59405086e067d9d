"""The vision projector's price, from its header alone (pure)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner import projector as pj
from planner.gguf import GGUFHeader, RawTensor
from planner.request import Request


def header(kind: str = "mlp", size: int = 336, patch: int = 14, n_embd: int = 1024,
           arch: str = "clip") -> GGUFHeader:
    meta = {"general.architecture": arch, "clip.projector_type": kind,
            "clip.has_vision_encoder": True, "clip.vision.image_size": size,
            "clip.vision.patch_size": patch, "clip.vision.embedding_length": n_embd,
            "clip.vision.feed_forward_length": 4 * n_embd,
            "clip.vision.attention.head_count": 16, "clip.vision.block_count": 24}
    tensors = (RawTensor("v.blk.0.ffn_up.weight", (n_embd, 4 * n_embd), 1, 0, 8 * n_embd**2),
               RawTensor("mm.0.weight", (n_embd, 4096), 1, 0, 2 * n_embd * 4096),
               RawTensor("mm.2.weight", (4096, 4096), 1, 0, 2 * 4096 * 4096))
    return GGUFHeader(3, meta, tensors, 0, 0)


def test_weights_are_every_tensor_of_the_file() -> None:
    p = pj.projector_profile(header())
    assert p.weights_bytes == 8 * 1024**2 + 2 * 1024 * 4096 + 2 * 4096 * 4096
    assert (p.proj_hidden, p.n_embd_text) == (4096, 4096)


def test_a_llava_image_is_one_token_per_patch_and_gemma3_pools_to_256() -> None:
    assert pj.projector_profile(header()).image_tokens == 24 * 24
    assert pj.projector_profile(header("gemma3", 896, 14)).image_tokens == 256


def test_flash_attention_spares_the_attention_scores() -> None:
    p = pj.projector_profile(header(size=448))
    scores = p.n_patches ** 2 * p.n_head * 4
    without = pj.compute_bytes(p, flash_attn=False)
    assert without >= scores > pj.compute_bytes(p, flash_attn=True)


def test_an_image_adds_its_tokens_as_prefill_and_its_encoding_to_ttft() -> None:
    p = pj.projector_profile(header())
    use = pj.place_projector(p, "gpu0", flops_per_s=1e12)
    assert use.encode_s == pytest.approx(pj.encode_flops(p) / 1e12)
    ttft = pj.image_ttft_s(0.5, prefill_tps=1000.0, use=use, images=2)
    assert ttft == pytest.approx(0.5 + 2 * (576 / 1000.0 + use.encode_s))


def test_a_text_model_is_not_a_projector() -> None:
    with pytest.raises(ValueError, match="not a vision projector"):
        pj.projector_profile(header(arch="llama"))


# -- in a plan ---------------------------------------------------------------------------

def _gemma_projector() -> pj.ProjectorProfile:
    """Gemma 3's SigLIP projector at its published width (27 blocks, 896 px, ~0.8 GB)."""
    return replace(pj.projector_profile(header("gemma3", 896, 14, 1152)),
                   weights_bytes=851 * 10**6, n_layer=27, n_ff=4304)


def test_the_projector_has_its_room_on_the_main_gpu_before_the_model_is_placed() -> None:
    from planner.plan import plan, plan_with_projector
    from tests.planner import shapes as S
    from tests.planner.rigs import RTX_3060, rig

    inv = rig(RTX_3060, ram_gib=32)
    model = S.build(S.GEMMA3_27B, "Q4_K_M")
    request = Request(context=8192, advise=False)
    alone = plan(inv, model, request)
    with_proj = plan_with_projector(inv, model, request, _gemma_projector())
    gpu = next(d for d in with_proj.devices if d.id == "gpu0")
    use = with_proj.projector
    assert use is not None and use.device == "gpu0"
    assert gpu.projector_bytes == use.total_bytes > 851 * 10**6
    assert gpu.free_bytes >= 0 and gpu.capacity_bytes == inv.gpus[0].free_bytes
    # the model gives up GPU room for it: fewer weights on the GPU than alone
    before = next(d for d in alone.devices if d.id == "gpu0")
    assert gpu.weights_bytes + gpu.kv_bytes < before.weights_bytes + before.kv_bytes
    doc = with_proj.to_json()
    assert doc["projector"]["image_tokens"] == 256
    assert doc["projector"]["image_ttft_s"] > doc["predicted"]["ttft_s"]
    assert doc["engine"]["mmproj_offload"] is True
    # Gemma 3 reads an image's 256 tokens in one micro-batch
    assert doc["engine"]["n_ubatch"] >= 256 and doc["engine"]["n_batch"] >= 256


def test_a_projector_not_offloaded_lives_in_host_ram() -> None:
    from planner.plan import plan_with_projector
    from tests.planner import shapes as S
    from tests.planner.rigs import RTX_4090, rig

    p = plan_with_projector(rig(RTX_4090), S.build(S.LLAMA3_8B, "Q4_K_M"),
                            Request(context=4096, advise=False), _gemma_projector(),
                            offload=False)
    host = next(d for d in p.devices if d.id == "host")
    assert p.projector is not None and p.projector.device == "host"
    assert host.projector_bytes == p.projector.total_bytes
    assert p.engine.mmproj_offload is False


def test_a_request_with_a_projector_plans_it_through_plan() -> None:
    from planner.plan import plan
    from tests.planner import shapes as S
    from tests.planner.rigs import RTX_4090, rig

    p = plan(rig(RTX_4090), S.build(S.LLAMA3_8B, "Q4_K_M"),
             Request(context=4096, advise=False, projector=_gemma_projector()))
    assert p.projector is not None and p.projector.device == "gpu0"
    assert next(d for d in p.devices if d.id == "gpu0").projector_bytes > 0


def test_gemma3_pools_its_patches_and_prices_the_siglip_graph() -> None:
    p = pj.projector_profile(header("gemma3", 896, 14, 1152))
    assert (p.n_patches, p.image_tokens) == (4096, 256)
    hidden = 4096 * 1152 * 4
    assert pj.compute_bytes(p, flash_attn=True) == 4096 * p.n_ff * 4 + 3 * hidden
    assert pj.compute_bytes(p, flash_attn=False) == 4096**2 * 16 * 4 + 6 * hidden


def test_this_machines_measured_prefill_slows_the_encoder_alike() -> None:
    from planner.machine_fit import RunSample, model_key, plan_regime
    from planner.plan import plan, plan_with_projector
    from tests.planner import shapes as S
    from tests.planner.rigs import RTX_4090, rig

    inv, model = rig(RTX_4090), S.build(S.LLAMA3_8B, "Q4_K_M")
    request = Request(context=4096, advise=False)
    raw = plan_with_projector(inv, model, request, _gemma_projector())
    regime = plan_regime(inv, model, plan(inv, model, request))
    runs = tuple(RunSample(regime, model_key(model), prefill_ratio=0.25) for _ in range(5))
    slow = plan_with_projector(inv, model, replace(request, machine_runs=runs),
                               _gemma_projector())
    assert slow.raw_predicted is not None
    ratio = slow.raw_predicted.prefill_tps / slow.predicted.prefill_tps
    assert ratio > 1.5
    assert raw.projector is not None and slow.projector is not None
    assert slow.projector.encode_s == pytest.approx(raw.projector.encode_s * ratio)
