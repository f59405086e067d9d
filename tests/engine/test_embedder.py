"""The embedder's pure parts (packing inputs into encodes, normalising) and the header check
that decides which engine serves a GGUF."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.demo import demo_model_path
from engine.embedder import normalise, pack
from engine.embedding_engine import embedding_kind, pooling_refusal
from tests.helpers.gguf_bert import BertShape, write_bert


def test_pack_keeps_order_and_respects_both_limits() -> None:
    groups = pack([100, 200, 300, 50, 50, 600, 10], max_tokens=512, max_inputs=3)
    assert [i for g in groups for i in g] == list(range(7))
    assert groups == [[0, 1], [2, 3, 4], [5], [6]]  # 600 > 512 goes alone


def test_pack_starts_a_group_when_the_inputs_are_full() -> None:
    assert pack([1] * 5, max_tokens=512, max_inputs=2) == [[0, 1], [2, 3], [4]]
    assert pack([], max_tokens=512, max_inputs=2) == []


def test_normalise_gives_unit_rows_and_keeps_a_zero_row_zero() -> None:
    rows = np.array([[3.0, 4.0], [0.0, 0.0], [-1.0, 0.0]], dtype=np.float32)
    out = normalise(rows)
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0], [-1.0, 0.0]], rtol=1e-6)
    assert out.dtype == np.float32


@pytest.mark.parametrize("pooling", ["mean", "cls", "last", "none"])
def test_a_bert_header_is_an_embedding_model_with_its_pooling(tmp_path: Path,
                                                              pooling: str) -> None:
    kind = embedding_kind(write_bert(tmp_path / "b.gguf", BertShape(pooling=pooling)))
    assert kind.architecture == "bert" and kind.is_embedding_model
    assert kind.pooling == pooling
    assert (pooling_refusal(kind.pooling) is None) == (pooling != "none")


def test_a_chat_model_is_not_an_embedding_model() -> None:
    kind = embedding_kind(demo_model_path())
    assert kind.architecture == "llama" and not kind.is_embedding_model
    assert kind.pooling is None
