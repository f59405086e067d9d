"""A pytest plugin that points llama.cpp's server test suite at one server binary.

Loaded by ``bench/llama_server_suite.py`` (``-p llama_server_suite_plugin``) into a run of
the suite's ``unit`` tests, left unchanged. It replaces exactly two things of the suite's
``utils.py``:

- the model download: ``ServerPreset.load_all`` fetches nothing, and every server that
  would fetch a model from the hub (``--hf-repo``, ``--hf-file``, ``--model-url``) is given
  the local model of ``LOADOUT_SUITE_MODEL`` (``--model PATH``) instead;
- the server start: the binary is ``LOADOUT_SUITE_SERVER`` (``llama-server``, or a script
  running ``loadout serve``); the arguments are the suite's own, untouched.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_TESTS_DIR = os.environ.get("LOADOUT_SUITE_TESTS_DIR", os.getcwd())
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

import utils  # noqa: E402  (the suite's own module, from its folder)

_original_start = utils.ServerProcess.start


def _start(self: Any, timeout_seconds: int = utils.DEFAULT_HTTP_TIMEOUT) -> None:
    model = os.environ["LOADOUT_SUITE_MODEL"]
    if self.model_hf_repo or self.model_hf_file or self.model_url:
        self.model_hf_repo = None
        self.model_hf_file = None
        self.model_url = None
        self.model_file = model
    self.server_path = os.environ["LOADOUT_SUITE_SERVER"]
    slow = float(os.environ.get("LOADOUT_SUITE_START_TIMEOUT", "0") or 0)
    _original_start(self, max(timeout_seconds, int(slow)))


def _load_all() -> None:
    """Nothing to download: every server uses the local model."""


utils.ServerProcess.start = _start  # type: ignore[method-assign]
utils.ServerPreset.load_all = staticmethod(_load_all)  # type: ignore[method-assign]
