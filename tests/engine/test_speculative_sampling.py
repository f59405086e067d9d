"""With sampling, n-gram speculation keeps the target's distribution (chi-square)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from engine.launch import LaunchSpec
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine

pytestmark = pytest.mark.slow

RUNS = 150
LENGTH = 5
# chi-square critical values at p = 0.001 by degrees of freedom
CRITICAL = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52, 6: 22.46, 7: 24.32}


def pooled(a: Counter[int], b: Counter[int], top: int = 5) -> tuple[Counter[int], ...]:
    """Both samples over the ``top`` commonest outcomes, the rest counted as one (-1)."""
    common = {k for k, _ in (a + b).most_common(top)}
    return tuple(Counter(k if k in common else -1 for k in x.elements()) for x in (a, b))


def chi_square(a: Counter[int], b: Counter[int]) -> tuple[float, int]:
    """Two-sample chi-square homogeneity statistic and its degrees of freedom."""
    a, b = pooled(a, b)
    keys = sorted(set(a) | set(b))
    na, nb = sum(a.values()), sum(b.values())
    stat = 0.0
    for k in keys:
        total = a[k] + b[k]
        for observed, n in ((a[k], na), (b[k], nb)):
            expected = total * n / (na + nb)
            stat += (observed - expected) ** 2 / expected
    return stat, len(keys) - 1


def test_sampled_tokens_keep_the_target_distribution(demo_model: Path) -> None:
    # copying code: drafts from the prompt are often, but not always, what is sampled
    prompt = ("Original:\n```python\ndef area(width, height):\n    return width * height\n"
              "```\nThe same code again:\n```python\ndef area(")
    last: dict[str, Counter[int]] = {"off": Counter(), "ngram": Counter()}
    drafted = accepted = 0
    with Engine(LaunchSpec(str(demo_model), n_threads=1, n_ctx=256)) as eng:
        for mode, first_seed in (("off", 100_000), ("ngram", 0)):
            for seed in range(first_seed, first_seed + RUNS):
                params = SamplingParams(temperature=1.5, top_k=3, top_p=1.0, min_p=0.0,
                                        seed=seed, max_tokens=LENGTH, ignore_eos=True,
                                        loop_guard="off", spec_mode=mode, draft_tokens=3)
                final = eng.submit(GenerationRequest(prompt=prompt, params=params)).result(60)
                assert len(final.token_ids) == LENGTH
                last[mode][final.token_ids[-1]] += 1
                drafted += final.metrics.drafted_tokens
                accepted += final.metrics.accepted_tokens
    # the drafts were both taken and refused, so both paths of verification ran
    assert 0 < accepted < drafted
    assert len(last["off"]) > 1  # a real distribution, not a single token
    stat, dof = chi_square(last["off"], last["ngram"])
    assert stat < CRITICAL[dof], (stat, dof, last)
