"""Why a load was refused, in the words the window shows."""

from __future__ import annotations

from app.load_refusal import refusal_text
from planner.plan import plan
from planner.request import Request
from tests.planner import shapes as S
from tests.planner.rigs import gpu, rig

# 16-wide heads: not whole 32-element blocks of a q8_0 / q4_0 cache
HD16 = S.ModelShape("hd16", "llama", 32, 1024, 64, 32, 16, 4096, 32000, 131072)


def test_a_kv_type_llama_cpp_refuses_is_named_with_its_numbers() -> None:
    p = plan(rig(gpu("G", 8, 400)), S.build(HD16, "Q4_K_M"),
             Request(advise=False, context=8192, kv_type="q4_0"))
    text = refusal_text("does_not_fit", "hd16.gguf", p)
    assert "hd16.gguf was not loaded" in text
    assert "as q4_0: its heads of 16 values are not whole blocks of 32" in text
    assert "?" not in text  # every number of the sentence is filled in
    assert "memory" not in text  # not a memory problem: a smaller model would not help
