"""Pooling GPUs of several computers through llama.cpp's own RPC backend (ggml-rpc).

Two sides:
- the *worker* (``loadout worker``) serves this machine's devices with
  ``ggml_backend_rpc_start_server`` from the engine build's ggml-rpc library
  (:mod:`engine.rpc.worker`, its tensor cache bounded by :mod:`engine.rpc.tensor_cache`);
- the *main* side probes each worker with a bounded, pure-Python conversation in the same
  wire protocol (:mod:`engine.rpc.wire`: HELLO, DEVICE_COUNT, GET_DEVICE_MEMORY), so an
  unreachable or busy worker is reported within a timeout instead of hanging inside C
  (:mod:`engine.rpc.probe`, :mod:`engine.rpc.link`), and only then registers the worker's
  devices with ggml (:mod:`engine.rpc.registration`). A worker that vanishes ends the
  process inside ggml-rpc; :mod:`engine.rpc.lost_worker` makes that end say why.

The RPC protocol has no authentication and no encryption: LAN only.

This package's face: the names callers use, each defined in the module named above.
"""

from __future__ import annotations

from engine.rpc.endpoint import DEFAULT_PORT, is_loopback, parse_endpoint
from engine.rpc.errors import RemoteBindRefused, WorkerError
from engine.rpc.library import engine_has_rpc
from engine.rpc.link import LinkMeasure, measure_link
from engine.rpc.lost_worker import announce_lost_workers, worker_lost
from engine.rpc.probe import RemoteDevice, WorkerProbe, probe_worker
from engine.rpc.registration import device_handles, register_worker, remote_device
from engine.rpc.tensor_cache import CACHE_PRUNE_EVERY_S, DEFAULT_CACHE_MAX_BYTES, prune_cache
from engine.rpc.worker import serve_worker

__all__ = [
    "CACHE_PRUNE_EVERY_S", "DEFAULT_CACHE_MAX_BYTES", "DEFAULT_PORT", "LinkMeasure",
    "RemoteBindRefused", "RemoteDevice", "WorkerError", "WorkerProbe",
    "announce_lost_workers", "device_handles", "engine_has_rpc", "is_loopback",
    "measure_link", "parse_endpoint", "probe_worker", "prune_cache", "register_worker",
    "remote_device", "serve_worker", "worker_lost",
]
