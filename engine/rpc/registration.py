"""The main side: connect a worker's devices for the loads that name them."""

from __future__ import annotations

import ctypes
from typing import Any

from engine.ggml_devices import adopt_backend_devices, device_handle, remembered_device
from engine.rpc.endpoint import parse_endpoint
from engine.rpc.errors import WorkerError
from engine.rpc.library import engine_has_rpc, rpc_library
from engine.rpc.lost_worker import announce_lost_workers
from engine.rpc.probe import probe_worker

_REGISTERED: list[str] = []  # endpoints of the workers registered in this process


def register_worker(endpoint: str, timeout_s: float = 3.0) -> list[str]:
    """Probe ``endpoint``, then connect its devices for loads that name them.

    Returns the llama.cpp names of the new devices (``RPC0``, ``RPC1`` ...): a load whose
    ``LaunchSpec.devices`` lists them places layers there like on local GPUs.

    Raises:
        WorkerError: the worker is unreachable, busy, of another protocol version, or the
            engine build has no RPC backend.
    """
    probe = probe_worker(endpoint, timeout_s)
    if not probe.reachable or probe.reason:
        raise WorkerError(f"worker {endpoint} cannot be used: {probe.reason}")
    if not engine_has_rpc():
        raise WorkerError("this engine build has no RPC backend (build with -DGGML_RPC=ON)")
    host, port = parse_endpoint(endpoint)
    reg = rpc_library().ggml_backend_rpc_add_server(f"{host}:{port}".encode())
    if not reg:
        raise WorkerError(f"worker {endpoint} serves no device")
    # The devices are deliberately NOT added to ggml's global registry: llama.cpp would
    # then hand them to every later load of this process and abort once the worker has
    # gone. Loads that want them name them (LaunchSpec.devices) and get these handles.
    names = adopt_backend_devices(int(reg))
    if endpoint not in _REGISTERED:
        _REGISTERED.append(endpoint)
    # a worker that vanishes later ends this process inside ggml-rpc: have it say why
    announce_lost_workers(list(_REGISTERED))
    return names


def remote_device(name: str) -> int | None:
    """The ``ggml_backend_dev_t`` of a registered worker's device (``RPC0`` ...), if any."""
    return remembered_device(name)


def device_handles(names: list[str]) -> Any:
    """A NULL-terminated ``ggml_backend_dev_t`` array of these devices, for
    ``llama_model_params.devices`` (keep it alive as long as the load uses it).

    llama.cpp uses a worker's registered devices only when a load names them this way.

    Raises:
        WorkerError: a name the engine does not know (a worker not registered yet).
    """
    handles = []
    for name in names:
        dev = device_handle(name)
        if not dev:
            raise WorkerError(f"no engine device {name!r} (is its worker registered?)")
        handles.append(dev)
    return (ctypes.c_void_p * (len(handles) + 1))(*handles, None)
