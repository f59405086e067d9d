"""The router's planning on a GPU rig: a model is placed into what the resident ones leave
(header-only model files; the rig is built in memory, no GPU needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.server.router_plan import RouterPlanner, budget_of, fits, need_of, shortfall_text
from planner.request import Request
from planner.residency import Resident
from tests.helpers.gguf_factory import Shape, write_llama
from tests.planner.rigs import GIB, RTX_4060, rig

# about 2.7 GiB on the GPU: all of it fits an 8 GiB card alone
SHAPE = Shape(n_layers=24, n_embd=2048, n_head=16, n_head_kv=4, head_dim=128, n_ff=5632,
              n_vocab=32000, n_ctx_train=8192)


def test_a_model_beside_a_resident_one_takes_what_the_gpu_has_left(tmp_path: Path) -> None:
    model = write_llama(tmp_path / "m.gguf", SHAPE, header_only=True)
    planner = RouterPlanner(rig(RTX_4060, ram_gib=64), Request(context=4096, advise=False))
    alone = planner.alone(model)
    assert fits(alone) and need_of(alone)["gpu0"] > 2.5 * GIB
    resident = Resident("other", (("gpu0", 5 * GIB), ("host", GIB)), 0.0)
    beside = planner.beside(model, [resident])
    assert fits(beside)
    left_on_gpu = budget_of(alone)["gpu0"] - 5 * GIB
    assert need_of(beside)["gpu0"] <= left_on_gpu < need_of(alone)["gpu0"]
    assert need_of(beside)["host"] > need_of(alone).get("host", 0)  # the rest went to RAM
    assert planner.spec(model, beside).n_gpu_layers < planner.spec(model, alone).n_gpu_layers


def test_the_shortfall_says_each_device_needed_and_free_in_mib_or_gib() -> None:
    text = shortfall_text({"host": int(1.2 * GIB), "gpu0": 300 * 1024**2},
                          {"host": int(0.8 * GIB), "gpu0": 0})
    assert text == "needs 300.0 MiB gpu0, 0.0 MiB free; needs 1.20 GiB RAM, 819.2 MiB free"


def test_one_models_pins_apply_to_it_alone(tmp_path: Path) -> None:
    from engine.server.router_plan import model_pins

    ids = {"m": "m", "m.gguf": "m", "other": "other"}
    pins = model_pins(["m.gguf=10"], ["m=Q8_0"], ids)
    assert pins == {"m": {"n_gpu_layers": 10, "kv_type": "q8_0"}}
    for ngl, kv, said in ((["m"], [], "give MODEL=VALUE"), (["x=3"], [], "x is not among"),
                          (["m=-1"], [], "0 or more"), ([], ["m=q5_1"], "one of f16, q8_0")):
        with pytest.raises(ValueError, match=said):
            model_pins(ngl, kv, ids)
    model = write_llama(tmp_path / "m.gguf", SHAPE, header_only=True)
    other = write_llama(tmp_path / "other.gguf", SHAPE, header_only=True)
    planner = RouterPlanner(rig(RTX_4060, ram_gib=64), Request(context=4096, advise=False),
                            pins={model: pins["m"]})
    pinned, free = planner.alone(model), planner.alone(other)
    assert (pinned.kv_type, planner.spec(model, pinned).n_gpu_layers) == ("q8_0", 10)
    assert free.kv_type == "f16" and planner.spec(other, free).n_gpu_layers > 10
