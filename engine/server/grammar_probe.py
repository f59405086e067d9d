"""A grammar is tried in a separate process before the engine thread ever parses it.

The size checks of :mod:`engine.server.grammar_budget` keep llama.cpp's parser from
crashing, but a small grammar can still be slow to apply: ``("a"?){0,200}`` is 22 bytes,
yet each token costs llama.cpp seconds (every way to place the optional items is a parse
stack), and the engine thread, which serves every slot, would stall on it. So every
grammar a request carries is first parsed and applied, for a few tokens, over the model's
whole vocabulary, by a child process that loads the vocabulary only; a grammar it cannot
finish within ``timeout_s`` (or that crashes it) is refused with a 400, and the child is
replaced. The engine thread only ever sees grammars that passed.

The child is ``loadout serve --grammar-checker MODEL.gguf`` (also in a frozen bundle; or
``python -m engine.server.grammar_probe MODEL.gguf``): one JSON line per grammar on stdin,
one JSON answer per line on stdout.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import subprocess
import sys
import threading
import time
from typing import IO, Any

from engine.engine_select import loadout_command
from engine.server.gbnf_elements import token_references
from engine.server.grammar_budget import BudgetExceeded

log = logging.getLogger(__name__)

PROBE_TOKENS = 3  # tokens sampled and accepted (a grammar's cost grows as it is followed)
DEFAULT_TIMEOUT_S = 2.0


class GrammarProbe:
    """The child process that tries grammars; started on first use, restarted when it
    times out or dies. Thread-safe (one grammar at a time).

    Args:
        model_path: the GGUF whose vocabulary the engine samples from.
        timeout_s: how long one grammar may take (parse and ``PROBE_TOKENS`` tokens).
    """

    def __init__(self, model_path: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.model_path = model_path
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._passed: dict[int, str] = {}  # grammars that passed (by hash; a few hundred)

    def start(self) -> None:
        """Start the child now (it takes a second to load the vocabulary)."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [*loadout_command(), "serve", "--grammar-checker", self.model_path],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True, encoding="utf-8", env={**os.environ, "GGML_NO_BACKTRACE": "1"})
            ready = _read_line(self._proc.stdout, 60.0)
            if ready is None or json.loads(ready).get("ready") is not True:
                self._kill()
                raise RuntimeError("the grammar checker did not start")
        return self._proc

    def check(self, grammar: str, field: str = "grammar") -> None:
        """Parse and apply ``grammar`` in the child.

        Raises:
            BudgetExceeded: it did not finish in ``timeout_s`` or it crashed the child
                (limit ``grammar_probe_s``).
            ValueError: llama.cpp cannot parse it, or no token can follow it somewhere
                on the path tried (the message says which).
        """
        if self._passed.get(hash(grammar)) == grammar:
            return
        with self._lock:
            proc = self._ensure()
            assert proc.stdin is not None
            started = time.monotonic()
            try:
                proc.stdin.write(json.dumps({"grammar": grammar}) + "\n")
                proc.stdin.flush()
            except OSError:
                line = None
            else:
                line = _read_line(proc.stdout, self.timeout_s)
            if line is None:
                took = time.monotonic() - started
                self._kill()
                raise BudgetExceeded(
                    f"the grammar is too slow to apply: {PROBE_TOKENS} tokens took over "
                    f"{self.timeout_s:g} s (grammar_probe_s)" if took >= self.timeout_s else
                    "the grammar crashed the grammar checker", "grammar_probe_s", field)
        answer = json.loads(line)
        if not answer.get("ok"):
            raise ValueError(str(answer.get("error")))
        if len(self._passed) >= 256:
            self._passed.clear()
        self._passed[hash(grammar)] = grammar

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """Stop the child."""
        with self._lock:
            self._kill()


def _read_line(stream: IO[str] | None, timeout_s: float) -> str | None:
    """One line from ``stream`` within ``timeout_s``, or None (timeout or end of stream)."""
    assert stream is not None
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not box or not box[0]:
        return None
    return box[0]


# ------------------------------------------------------------------ the child


def _refuse_end_tokens(vocab: Any, grammar: str) -> None:
    """A token reference to an end-of-generation token can never match: llama.cpp's
    grammar sampler allows those only where the grammar is complete."""
    from engine.native.tokens import Vocab

    tokens = Vocab(vocab)
    for ref in token_references(grammar):
        body = ref[1:-1]
        if body.startswith("[") and body.endswith("]") and body[1:-1].isdigit():
            ids = [int(body[1:-1])]
        else:
            ids = tokens.tokenize(ref, add_special=False, parse_special=True)  # <|im_end|>
        if len(ids) == 1 and 0 <= ids[0] < tokens.n_tokens and tokens.is_eog(ids[0]):
            raise ValueError(f"the grammar requires {ref[:40]}, an end-of-generation token, "
                             "which a grammar can never match (an answer ends by itself "
                             "where its grammar is complete)")


def _apply(lib: Any, vocab: Any, n_vocab: int, grammar: str) -> None:
    import numpy as np

    _refuse_end_tokens(vocab, grammar)

    sampler = lib.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
    if not sampler:
        raise ValueError("the grammar does not parse (GBNF): llama.cpp refused it")
    # llama_token_data is {int32 id; float logit; float p}
    data = np.zeros(n_vocab, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
    pointer = ctypes.cast(data.ctypes.data, ctypes.POINTER(lib.llama_token_data))
    try:
        for _ in range(PROBE_TOKENS):
            data["id"] = np.arange(n_vocab, dtype=np.int32)
            data["logit"] = 0.0
            array = lib.llama_token_data_array(data=pointer, size=n_vocab, selected=-1,
                                               sorted=False)
            lib.llama_sampler_apply(sampler, ctypes.byref(array))
            allowed = np.flatnonzero(np.isfinite(data["logit"][:array.size]))
            if not allowed.size:  # a complete grammar still allows end-of-generation
                raise ValueError("the grammar reaches a point where no token of this "
                                 "model's vocabulary can match")
            lib.llama_sampler_accept(sampler, int(data["id"][allowed[0]]))
    finally:
        lib.llama_sampler_free(sampler)


def main(argv: list[str]) -> int:
    """Serve grammar checks for the model at ``argv[0]`` (see the module docstring)."""
    from engine.native.model import llama

    lib = llama()  # the backend initialised, its log routed into logging (not stdout)
    params = lib.llama_model_default_params()
    params.vocab_only = True
    model = lib.llama_model_load_from_file(argv[0].encode(), params)
    if not model:
        return 1
    vocab = lib.llama_model_get_vocab(model)
    n_vocab = lib.llama_vocab_n_tokens(vocab)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        grammar = json.loads(line)["grammar"]
        try:
            _apply(lib, vocab, n_vocab, grammar)
            answer: dict[str, Any] = {"ok": True}
        except ValueError as exc:
            answer = {"ok": False, "error": str(exc)}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
