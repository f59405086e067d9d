"""Loading a model exactly as the LaunchSpec says: overrides, progress, cancel, failures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gguf import GGUFReader

from engine.errors import (
    AllocationFailedError,
    CorruptModelError,
    ModelLoadCancelled,
    ModelLoadError,
    ModelNotFoundError,
    OutOfMemoryError,
)
from engine.launch import LaunchSpec, load_with_replan
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine

pytestmark = pytest.mark.slow

EXPERTS = r"blk\.[01]\.ffn_(up|down|gate)_exps"


def test_spec_round_trips_through_json() -> None:
    spec = LaunchSpec("/m.gguf", n_ctx=8192, n_seq_max=2, tensor_split=(0.7, 0.3),
                      flash_attn="on", type_k="q8_0", tensor_overrides=((EXPERTS, "CPU"),))
    assert LaunchSpec.from_json(spec.to_json()) == spec
    assert spec.n_ctx_per_seq == 4096


def test_spec_from_plan_engine_uses_llama_cpp_names() -> None:
    engine = {"n_ctx": 65536, "n_seq_max": 2, "flash_attn": True, "type_k": "Q8_0",
              "tensor_overrides": [[EXPERTS, "CPU"]], "tensor_split": [1, 1],
              "something_new": 3}
    spec = LaunchSpec.from_plan_engine("/m.gguf", engine)
    assert spec.flash_attn == "on" and spec.type_k == "q8_0"
    assert spec.tensor_overrides == ((EXPERTS, "CPU"),)
    assert spec.tensor_split == (1.0, 1.0)
    with pytest.raises(ValueError):
        LaunchSpec("/m.gguf", split_mode="diagonal")
    # llama-cpp-python's own spellings: ggml type ids, split mode numbers, null lists
    spec = LaunchSpec.from_plan_engine("/m.gguf", {"type_k": 8, "type_v": 1, "split_mode": 0,
                                                   "tensor_split": None,
                                                   "tensor_overrides": []})
    assert (spec.type_k, spec.type_v, spec.split_mode) == ("q8_0", "f16", "none")
    assert spec.tensor_split == () and spec.tensor_overrides == ()


def test_every_overridden_expert_tensor_is_placed_by_llama_cpp(moe_gguf: Path) -> None:
    names = [t.name for t in GGUFReader(moe_gguf).tensors]
    wanted = sorted(n for n in names if re.search(EXPERTS, n))
    assert len(wanted) == 6
    spec = LaunchSpec(str(moe_gguf), n_threads=1, n_ctx=256, tensor_overrides=((EXPERTS, "CPU"),))
    with Engine(spec) as eng:
        overridden = {}
        for line in eng.load_log:
            found = re.search(r"tensor (\S+) \(.*\) buffer type overridden to (\S+)", line)
            if found:
                overridden[found.group(1)] = found.group(2)
        answer = eng.submit(GenerationRequest(
            prompt="a b", params=SamplingParams(max_tokens=4, loop_guard="off"))).result(30)
    assert sorted(overridden) == wanted
    assert all(buft.startswith("CPU") for buft in overridden.values())
    assert answer.metrics.generated_tokens >= 1


def test_override_to_a_device_the_build_lacks_is_a_clear_error(moe_gguf: Path) -> None:
    spec = LaunchSpec(str(moe_gguf), n_threads=1, n_ctx=256, tensor_overrides=((EXPERTS, "CUDA7"),))
    with pytest.raises(ModelLoadError, match="CUDA7"):
        Engine(spec)


def test_load_progress_is_reported_as_a_rising_fraction(llama_gguf: Path) -> None:
    seen: list[float] = []
    with Engine(LaunchSpec(str(llama_gguf), n_threads=1, n_ctx=256),
                progress=lambda f: seen.append(f) is None) as eng:
        assert eng.status()["load_progress"] == 1.0
    assert seen and seen[-1] == 1.0
    assert seen == sorted(seen) and all(0.0 <= f <= 1.0 for f in seen)


def test_load_can_be_cancelled(llama_gguf: Path) -> None:
    with pytest.raises(ModelLoadCancelled):
        Engine(LaunchSpec(str(llama_gguf), n_threads=1, n_ctx=256), progress=lambda f: False)


def test_missing_file_folder_and_non_gguf_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="no such model file"):
        Engine(LaunchSpec(str(tmp_path / "nope.gguf")))
    with pytest.raises(ModelNotFoundError, match="folder"):
        Engine(LaunchSpec(str(tmp_path), n_threads=1))
    text = tmp_path / "notes.gguf"
    text.write_text("hello, I am not a model")
    with pytest.raises(CorruptModelError, match="not a GGUF"):
        Engine(LaunchSpec(str(text), n_threads=1))


def test_kv_type_the_model_cannot_use_is_a_clear_error(llama_gguf: Path) -> None:
    # head_dim 16 is not a multiple of q8_0's block of 32
    with pytest.raises(ModelLoadError, match="does not divide"):
        Engine(LaunchSpec(str(llama_gguf), n_threads=1, n_ctx=256, type_k="q8_0"))


def test_truncated_model_is_a_load_error(llama_gguf: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.gguf"
    data = llama_gguf.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match="could not load"):
        Engine(LaunchSpec(str(cut), n_threads=1))


@pytest.fixture(scope="module")
def wide_kv_gguf(synthetic_dir: Path) -> Path:
    """A small model whose KV cache is large per token (128 KiB per cell in f32)."""
    from tests.helpers.gguf_factory import Shape, write_llama

    shape = Shape(n_layers=8, n_head=16, n_head_kv=16, head_dim=128)
    return write_llama(synthetic_dir / "wide-kv.gguf", shape)


HUGE_CTX = 2_000_000  # x 128 KiB = 244 GiB of KV cache: more than any test machine has


def test_oversized_context_reports_asked_and_free_memory(wide_kv_gguf: Path) -> None:
    spec = LaunchSpec(str(wide_kv_gguf), n_threads=1, n_ctx=HUGE_CTX, type_k="f32", type_v="f32")
    with pytest.raises(AllocationFailedError) as info:
        Engine(spec)
    err = info.value
    assert isinstance(err, OutOfMemoryError) and isinstance(err, MemoryError)
    assert err.device == "CPU"
    assert err.asked_bytes is not None and err.free_bytes is not None
    assert err.asked_bytes > err.free_bytes
    assert "asked for" in str(err) and "free" in str(err)


def test_out_of_memory_is_retried_with_a_replan(wide_kv_gguf: Path) -> None:
    contexts = [HUGE_CTX, HUGE_CTX // 2, 512]
    asked: list[int] = []

    def make_spec(attempt: int) -> LaunchSpec:
        asked.append(contexts[attempt])
        return LaunchSpec(str(wide_kv_gguf), n_threads=1, n_ctx=contexts[attempt], type_k="f32",
                          type_v="f32")

    eng = load_with_replan(make_spec, Engine, max_attempts=3)
    try:
        assert eng.n_ctx_per_seq == 512
    finally:
        eng.close()
    assert asked == contexts
    with pytest.raises(OutOfMemoryError):
        load_with_replan(lambda i: LaunchSpec(str(wide_kv_gguf), n_threads=1, n_ctx=HUGE_CTX,
                                              type_k="f32", type_v="f32"),
                         Engine, max_attempts=2)


def test_context_parameters_are_applied(wide_kv_gguf: Path) -> None:
    spec = LaunchSpec(str(wide_kv_gguf), n_threads=1, n_ctx=1024, n_seq_max=4, n_batch=256,
                      n_ubatch=128, type_k="q8_0", type_v="q8_0", flash_attn="on",
                      use_mmap=False)
    with Engine(spec) as eng:
        log = "\n".join(eng.load_log)
        status = eng.status()
    assert status["n_ctx"] == 1024 and eng.n_ctx_per_seq == 256
    assert len(status["slots"]) == 4
    assert re.search(r"n_batch\s*=\s*256", log) and re.search(r"n_ubatch\s*=\s*128", log)
    assert re.search(r"K \(q8_0\)", log) and re.search(r"V \(q8_0\)", log)
    # use_mmap=False: weights copied into a plain CPU buffer, not mapped from the file
    assert re.search(r"CPU model buffer size", log) and "CPU_Mapped" not in log


def test_weights_are_mapped_from_the_file_by_default(llama_gguf: Path) -> None:
    with Engine(LaunchSpec(str(llama_gguf), n_threads=1, n_ctx=256)) as eng:
        log = "\n".join(eng.load_log)
    assert "load_mode = mmap" in log and "CPU_Mapped model buffer size" in log


def test_a_plans_spec_reads_back_from_its_file_typed(tmp_path: Path) -> None:
    from engine.launch import read_spec_file, spec_of_plan, write_spec_file
    from planner.plan import plan
    from planner.request import Request
    from tests.planner import shapes as S
    from tests.planner.rigs import RTX_3060, RTX_4090, rig

    p = plan(rig(RTX_4090, RTX_3060, ram_gib=64), S.build(S.LLAMA3_70B, "Q4_K_M", 39.59),
             Request(advise=False, kv_type="q8_0"))
    spec = spec_of_plan("/m.gguf", p, n_threads=3)
    back = read_spec_file(write_spec_file(spec, tmp_path))
    assert back == spec and back.type_k.id == 8 and back.split_mode.id == 1
    assert back.tensor_split == p.engine.tensor_split and back.n_threads_batch == 3
    assert read_spec_file(write_spec_file(spec, tmp_path), "/other.gguf").model_path == \
        "/other.gguf"
