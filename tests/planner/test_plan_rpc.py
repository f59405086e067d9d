"""Plans with RPC workers' devices: GPUs (or CPUs) behind a network link."""

from __future__ import annotations

from dataclasses import replace

from planner.codes import Code
from planner.inventory import Backend, Gpu, Inventory, Vendor
from planner.plan import Plan, plan
from planner.request import Request, Role
from tests.planner import shapes as S
from tests.planner.rigs import GIB, RTX_3090, rig

QUIET = Request(advise=False)
TEN_GBE = 1.25          # GB/s
ONE_GBE = 0.117


def remote(name: str, vram_gib: float, bandwidth: float, endpoint: str, *,
           link_gbps: float = TEN_GBE, latency_s: float = 0.2e-3, cpu: bool = False,
           same_host: bool = False) -> Gpu:
    """A device an RPC worker serves, all its memory free."""
    total = int(vram_gib * GIB)
    return Gpu(index=0, name=name, vendor=Vendor.OTHER, backend=Backend.RPC,
               total_bytes=total, free_bytes=total, bandwidth_gbps=bandwidth, pcie_gbps=0.0,
               tflops_fp16=0.0 if cpu else 71.0, endpoint=endpoint, link_gbps=link_gbps,
               link_latency_s=latency_s, same_host=same_host, worker_cpu=cpu)


def _notes(p: Plan, code: Code) -> list[dict[str, object]]:
    return [dict(n.numbers) for n in (*p.decisions, *p.warnings) if n.code == code]


def _roles(p: Plan) -> dict[int, tuple[Role, Code]]:
    return {r.gpu: (r.role, r.reason) for r in p.roles}


def test_a_model_too_big_for_one_pc_puts_layers_on_a_workers_gpu() -> None:
    inv = rig(RTX_3090, remote("RTX 3090", 24, 936, "10.0.0.2:50052"), ram_gib=64)
    p = plan(inv, S.build(S.LLAMA3_70B, "Q4_K_M"), QUIET)
    alone = plan(rig(RTX_3090, ram_gib=64), S.build(S.LLAMA3_70B, "Q4_K_M"), QUIET)
    layers = p.layout.placement.layer_devices  # type: ignore[union-attr]
    assert p.fits and "gpu1" in layers
    # llama.cpp's order: the worker's blocks first, the local GPU (and the output) last
    assert layers.index("gpu1") < layers.index("gpu0")
    assert _roles(p)[0][0] == Role.MAIN and _roles(p)[1][0] == Role.HELPER
    assert p.predicted.decode_tps > alone.predicted.decode_tps
    note = _notes(p, Code.REMOTE_LAYERS)[0]
    assert note["endpoint"] == "10.0.0.2:50052" and note["link_gbps"] == TEN_GBE
    assert note["why"] == Code.REMOTE_NEEDED_FOR_FIT


def test_engine_params_name_the_workers_devices_in_layer_order() -> None:
    inv = rig(RTX_3090, remote("RTX 3090", 24, 936, "10.0.0.2:50052"), ram_gib=64)
    p = plan(inv, S.build(S.LLAMA3_70B, "Q4_K_M"), QUIET)
    e = p.engine
    assert e.rpc_workers == ("10.0.0.2:50052",)
    assert e.devices == ("RPC0", "CUDA0")
    layers = p.layout.placement.layer_devices  # type: ignore[union-attr]
    counts = [layers.count("gpu1"), layers.count("gpu0")]
    assert e.tensor_split == (float(counts[0]), float(counts[1] + 1))
    assert e.main_gpu == 1 and e.n_gpu_layers == S.LLAMA3_70B.n_layers + 1 - \
        layers.count("host")


def test_without_workers_the_engine_params_are_unchanged() -> None:
    p = plan(rig(RTX_3090, ram_gib=64), S.build(S.LLAMA3_8B, "Q4_K_M"), QUIET)
    assert "devices" not in p.engine.to_json() and "rpc_workers" not in p.engine.to_json()


def test_a_model_that_fits_locally_stays_local() -> None:
    inv = rig(RTX_3090, remote("RTX 3090", 24, 936, "10.0.0.2:50052"), ram_gib=64)
    p = plan(inv, S.build(S.LLAMA3_8B, "Q4_K_M"), QUIET)
    assert "gpu1" not in p.layout.placement.layer_devices  # type: ignore[union-attr]
    assert _roles(p)[1][0] == Role.OFF
    assert _notes(p, Code.REMOTE_NOT_USED) and "rpc_workers" not in p.engine.to_json()


def test_a_workers_gpu_is_never_main_while_a_local_gpu_exists() -> None:
    big = remote("RTX 6000 Ada", 48, 960, "10.0.0.2:50052")
    inv = rig(RTX_3090, big, ram_gib=64)
    p = plan(inv, S.build(S.LLAMA3_70B, "Q4_K_M"), QUIET)
    assert _roles(p)[0][0] == Role.MAIN


def test_a_slower_link_costs_more_per_token() -> None:
    model = S.build(S.LLAMA3_70B, "Q4_K_M")
    fast = plan(rig(RTX_3090, remote("RTX 3090", 24, 936, "a:1"), ram_gib=64), model, QUIET)
    slow = plan(rig(RTX_3090, remote("RTX 3090", 24, 936, "a:1", link_gbps=ONE_GBE,
                                     latency_s=5e-3), ram_gib=64), model, QUIET)
    assert slow.predicted.transfer_s > fast.predicted.transfer_s
    assert slow.predicted.decode_tps < fast.predicted.decode_tps
    # prefill sends n_ubatch hidden states per boundary: 1 GbE shows in prefill too
    assert slow.predicted.prefill_tps < fast.predicted.prefill_tps


def test_a_worker_on_this_machine_adds_nothing_and_is_left_off() -> None:
    ram = 32
    worker = remote("CPU", ram, 80.0, "127.0.0.1:50052", link_gbps=10.0, latency_s=50e-6,
                    cpu=True, same_host=True)
    inv = rig(worker, ram_gib=ram)
    p = plan(inv, S.build(S.LLAMA3_8B, "Q4_K_M"), QUIET)
    assert all(d == "host" for d in p.layout.placement.layer_devices)  # type: ignore[union-attr]
    assert _roles(p)[0] == (Role.OFF, Code.ROLE_OFF_SAME_HOST)


def test_pinned_same_host_workers_are_used_priced_and_warned_about() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")
    workers = [remote("CPU", 32, 80.0, f"127.0.0.1:5005{i}", link_gbps=10.0,
                      latency_s=50e-6, cpu=True, same_host=True) for i in (1, 2)]
    inv = rig(*workers, ram_gib=32)
    local = plan(rig(ram_gib=32), model, QUIET)
    p = plan(inv, model, replace(QUIET, roles=(Role.HELPER, Role.HELPER),
                                 tensor_split=(1.0, 1.0)))
    layers = p.layout.placement.layer_devices  # type: ignore[union-attr]
    assert set(layers) == {"gpu0", "gpu1"}
    assert p.engine.devices == ("RPC0", "RPC1")
    assert p.engine.rpc_workers == ("127.0.0.1:50051", "127.0.0.1:50052")
    split = p.engine.tensor_split
    assert sum(split) == model.n_layers + 1 and all(s > 0 for s in split)
    assert len(_notes(p, Code.SAME_HOST)) == 2
    # same cores, same RAM, plus the calls: slower than not using them
    assert p.predicted.decode_tps < local.predicted.decode_tps


def test_rpc_fields_survive_a_rig_file() -> None:
    inv = rig(RTX_3090, remote("RTX 3090", 24, 936, "10.0.0.2:50052", latency_s=3e-4,
                               cpu=True, same_host=False))
    back = Inventory.from_json(inv.to_json())
    assert back == inv
    assert back.gpus[1].remote and not back.gpus[0].remote


def test_a_hand_written_worker_entry_in_a_rig_file() -> None:
    doc = rig(RTX_3090).to_json()
    doc["gpus"].append({"name": "RTX 3090", "backend": "rpc", "total_bytes": 24 * GIB,
                        "endpoint": "box:50052", "link_gbps": 0.117,
                        "link_latency_s": 0.0005})
    inv = Inventory.from_json(doc)
    g = inv.gpus[1]
    assert g.remote and g.endpoint == "box:50052" and g.bandwidth_gbps > 500


def test_a_same_host_worker_never_counts_as_more_memory() -> None:
    # its RAM is this machine's RAM: a model too big for it is not "fitted" by the worker
    worker = remote("CPU", 16, 40.0, "127.0.0.1:50052", link_gbps=10.0, latency_s=50e-6,
                    cpu=True, same_host=True)
    p = plan(rig(worker, ram_gib=16, ram_bw=40.0), S.build(S.LLAMA3_70B, "Q4_K_M"), QUIET)
    assert "gpu0" not in p.layout.placement.layer_devices  # type: ignore[union-attr]
    assert _roles(p)[0] == (Role.OFF, Code.ROLE_OFF_SAME_HOST)
    assert p.streams_from_disk


def test_a_remote_only_main_is_used_when_this_machine_cannot_hold_the_model() -> None:
    worker = remote("RTX 3090", 24, 936, "10.0.0.2:50052")
    p = plan(rig(worker, ram_gib=8, ram_bw=40.0), S.build(S.LLAMA3_8B, "Q4_K_M"), QUIET)
    layers = p.layout.placement.layer_devices  # type: ignore[union-attr]
    assert p.fits and set(layers) == {"gpu0"}
    assert p.engine.devices == ("RPC0",) and p.engine.rpc_workers == ("10.0.0.2:50052",)
