"""What applying a grammar costs llama.cpp per token, over the demo model's vocabulary.

The budget in ``engine/server/grammar_budget.py`` bounds a grammar's size, but not what it
costs to apply: a short grammar whose optional items can be placed in many ways keeps one
parse stack per placement. This prints, for a few grammars, the seconds one sampling step
takes (the grammar applied to all 49,152 candidates, then the first allowed token
accepted), as the engine thread would spend them; the server's grammar checker
(``engine/server/grammar_probe.py``) refuses a grammar whose first steps take over 2 s.

Run: ``.venv/bin/python bench/grammar_cost.py [--tokens N]``.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GRAMMARS = {
    "a literal": 'root ::= "hello"',
    "JSON object (json_object)": None,
    "string, maxLength 512 (converted)": {"type": "string", "maxLength": 512},
    "nested 1024 deep": "root ::= " + "(" * 1024 + '"a"' + ")" * 1024,
    '("a"?){0,50}': 'root ::= ("a"?){0,50}',
    '("a"?){0,100}': 'root ::= ("a"?){0,100}',
    '("a"?){0,200}': 'root ::= ("a"?){0,200}',
}


def main() -> None:
    import numpy as np

    from engine.demo import demo_model_path
    from engine.native.model import llama
    from engine.server import grammar as gbnf

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=2)
    args = parser.parse_args()
    lib = llama()
    params = lib.llama_model_default_params()
    params.vocab_only = True
    model = lib.llama_model_load_from_file(str(demo_model_path()).encode(), params)
    vocab = lib.llama_model_get_vocab(model)
    n_vocab = lib.llama_vocab_n_tokens(vocab)
    data = np.zeros(n_vocab, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
    pointer = ctypes.cast(data.ctypes.data, ctypes.POINTER(lib.llama_token_data))
    print(f"seconds per sampling step, {n_vocab} candidates, first {args.tokens} steps:")
    for name, source in GRAMMARS.items():
        if source is None:
            text = gbnf.json_object_gbnf()
        elif isinstance(source, dict):
            text = gbnf.schema_to_gbnf(source)
        else:
            text = source
        sampler = lib.llama_sampler_init_grammar(vocab, text.encode(), b"root")
        steps = []
        for _ in range(args.tokens):
            data["id"] = np.arange(n_vocab, dtype=np.int32)
            data["logit"] = 0.0
            array = lib.llama_token_data_array(data=pointer, size=n_vocab, selected=-1,
                                               sorted=False)
            t0 = time.perf_counter()
            lib.llama_sampler_apply(sampler, ctypes.byref(array))
            allowed = np.flatnonzero(np.isfinite(data["logit"]))
            if allowed.size:
                lib.llama_sampler_accept(sampler, int(data["id"][allowed[0]]))
            steps.append(time.perf_counter() - t0)
            if not allowed.size:
                break
        lib.llama_sampler_free(sampler)
        print(f"  {name:36s} {len(text):7d} bytes  " +
              "  ".join(f"{s:8.3f}" for s in steps))


if __name__ == "__main__":
    main()
