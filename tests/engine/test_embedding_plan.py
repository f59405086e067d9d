"""The embedding context in the plan: beside a chat model's context (``serve --embeddings``)
and in place of it for an embedding model, and in the router's residency decision.

Models: a synthetic llama (header only, on a GPU rig) and a synthetic BERT written with
the ``gguf`` package; the figures the planner prices are checked against llama.cpp by
``bench/memory_accuracy.py`` (its ``+embed`` rows).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.gguf_file import load_profile
from engine.server.router_plan import RouterPlanner, budget_of, fits, need_of
from planner.embedding_memory import (
    ENCODE_TOKENS,
    MAX_INPUT_TOKENS,
    MAX_SEQUENCES,
    EmbeddingContext,
    embedding_batch,
    embedding_memory,
    encoder_compute_bytes,
    is_embedding_model,
    is_encoder,
)
from planner.embedding_plan import placement_of
from planner.memory import Placement
from planner.plan import plan
from planner.request import Request
from planner.residency import Resident, make_room
from tests.helpers.gguf_bert import BertShape, write_bert
from tests.helpers.gguf_factory import Shape, write_llama
from tests.planner.rigs import RTX_4060, rig

SHAPE = Shape(n_layers=24, n_embd=2048, n_head=16, n_head_kv=4, head_dim=128, n_ff=5632,
              n_vocab=32000, n_ctx_train=8192)
MIB = 1024**2


@pytest.fixture(name="llama", scope="module")
def llama_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_llama(tmp_path_factory.mktemp("emb") / "m.gguf", SHAPE, header_only=True)


@pytest.fixture(name="bert", scope="module")
def bert_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bert(tmp_path_factory.mktemp("bert") / "bert.gguf",
                      BertShape(n_layers=2, n_embd=384, n_head=12, n_ff=1536,
                                n_ctx_train=2048))


def _total(memory: tuple[object, ...]) -> int:
    return sum(m.total_bytes for m in memory)  # type: ignore[attr-defined]


def test_the_engine_sizes_the_context_as_the_planner_prices_it() -> None:
    from engine import embedder
    from engine.native import embeddings

    assert embeddings.MAX_SEQUENCES == MAX_SEQUENCES
    assert (embedder.ENCODE_TOKENS, embedder.MAX_INPUT_TOKENS) == (ENCODE_TOKENS,
                                                                   MAX_INPUT_TOKENS)
    assert [embedding_batch(n) for n in (100, 512, 3000, 32768)] == [512, 512, 3000, 8192]


def test_a_chat_model_with_embeddings_holds_the_embedding_context_on_its_devices(
        llama: Path) -> None:
    profile = load_profile(llama)
    assert not is_embedding_model(profile) and not is_encoder(profile)
    inventory = rig(RTX_4060, ram_gib=32)
    request = Request(context=4096, advise=False)
    plain = plan(inventory, profile, request)
    both = plan(inventory, profile, Request(context=4096, advise=False,
                                            embedding_context=True))
    assert plain.fits and both.fits and both.context == plain.context == 4096
    extra = embedding_memory(profile, EmbeddingContext(4096, both.kv_type, both.kv_type),
                             placement_of(both, profile))
    # llama.cpp's figures for this context (bench/memory_accuracy.py): hundreds of MiB
    assert _total(extra) > 500 * MIB
    used = {d.id: d.used_bytes for d in both.devices}
    plain_used = {d.id: d.used_bytes for d in plain.devices}
    assert placement_of(both, profile) == placement_of(plain, profile)  # room to spare
    assert sum(used.values()) - sum(plain_used.values()) == _total(extra)
    gpu = next(m for m in extra if m.device == "gpu0")
    assert gpu.kv_bytes > 0 and gpu.compute_bytes > 0  # the layers' device holds them
    for d in both.devices:  # still within each device
        assert d.free_bytes >= 0, d


def test_an_embedding_model_is_planned_with_its_embedding_context_only(bert: Path) -> None:
    profile = load_profile(bert)
    assert is_embedding_model(profile) and is_encoder(profile)
    p = plan(rig(ram_gib=16), profile, Request(context=8192, parallel=4, advise=False))
    host = next(d for d in p.devices if d.id == "host")
    assert p.fits and p.context == 2048  # its trained context: the longest input
    assert host.kv_bytes == 0  # an encoder has no cache
    assert host.compute_bytes == encoder_compute_bytes(profile, 2048)
    # the mask of a 2048-token batch and the activations of its tokens: llama.cpp
    # reserves 29.52 MiB for this shape (its log, CPU build; bench/memory_accuracy.py
    # compares other shapes): within 0.2%
    assert abs(host.compute_bytes - 29.52 * MIB) < 0.06 * MIB
    off = plan(rig(ram_gib=16), profile, Request(context=8192, parallel=4, advise=False,
                                                 embedding_context=False))
    assert next(d for d in off.devices if d.id == "host").kv_bytes > 0  # a chat context


def test_the_router_makes_room_for_the_embedding_context_too(llama: Path) -> None:
    inventory, request = rig(RTX_4060, ram_gib=64), Request(context=4096, advise=False)
    plain = RouterPlanner(inventory, request).alone(llama)
    both = RouterPlanner(inventory, request, embeddings=True).alone(llama)
    assert fits(plain) and fits(both)
    need, need_both = need_of(plain), need_of(both)
    assert need_both["gpu0"] > need["gpu0"]
    # a resident that leaves the GPU room for the model alone, not with its embeddings
    budget = budget_of(plain)
    left = need["gpu0"] + (need_both["gpu0"] - need["gpu0"]) // 2
    resident = Resident("other", (("gpu0", budget["gpu0"] - left),), 0.0)
    assert make_room(budget, [resident], need).evict == ()
    decision = make_room(budget, [resident], need_both)
    assert decision.fits and decision.evict == ("other",)


def test_an_encoder_on_a_gpu_computes_there_and_outputs_to_ram(bert: Path) -> None:
    profile = load_profile(bert)
    memory = embedding_memory(profile, EmbeddingContext(512),
                              Placement(("gpu0", "gpu0"), ("gpu0", "gpu0"), "gpu0"))
    host, gpu = memory
    assert (host.device, gpu.device) == ("host", "gpu0")
    assert gpu.compute_bytes == encoder_compute_bytes(profile, 512) and host.compute_bytes == 0
    assert host.output_bytes == (profile.n_vocab + profile.n_embd) * MAX_SEQUENCES * 4


def test_serve_with_embeddings_plans_the_embedding_context() -> None:
    from engine.demo import demo_model_path
    from loadout.cli import build_parser
    from loadout.commands import serve

    path = demo_model_path()
    docs = [serve._planned(build_parser().parse_args(["serve", "demo", "--ctx", "1024",
                                                      *extra]), path).plan
            for extra in ((), ("--embeddings",))]
    host = [next(d for d in doc["devices"] if d["id"] == "host") for doc in docs]
    profile = load_profile(path)
    extra = embedding_memory(profile, EmbeddingContext(1024),
                             Placement.all_on("host", profile.n_layers))
    assert host[1]["kv_bytes"] - host[0]["kv_bytes"] == extra[0].kv_bytes > 0
    assert host[1]["compute_bytes"] - host[0]["compute_bytes"] == extra[0].compute_bytes
    assert host[1]["other_bytes"] - host[0]["other_bytes"] == extra[0].output_bytes


def test_a_moe_plans_placement_follows_its_expert_ranges(tmp_path: Path) -> None:
    from tests.helpers.gguf_factory import write_qwen3moe

    moe = Shape(n_layers=24, n_embd=2048, n_head=32, n_head_kv=4, head_dim=128, n_ff=6144,
                n_vocab=151936, n_expert=128, n_expert_used=8, n_ff_exp=768)
    profile = load_profile(write_qwen3moe(tmp_path / "moe.gguf", moe, header_only=True))
    p = plan(rig(RTX_4060, ram_gib=64), profile, Request(context=4096, advise=False))
    placement = placement_of(p, profile)
    ram = [i for d in p.devices if d.id == "host" for a, b in d.expert_layers
           for i in range(a, b)]
    assert ram and all(placement.expert_devices[i] == "host" for i in ram)  # experts spilled
    gpu_blocks = [i for d in p.devices if d.id == "gpu0" for a, b in d.layers
                  for i in range(a, b)]
    assert gpu_blocks and all(placement.layer_devices[i] == "gpu0" for i in gpu_blocks)
    # a block on the GPU whose experts no range names keeps them with it
    assert all(placement.expert_devices[i] == "gpu0" for i in gpu_blocks if i not in ram)
