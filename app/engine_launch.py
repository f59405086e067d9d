"""How the app starts an engine process: its address, its command line, and safer retries.

No Qt here: plain values and functions, used by :mod:`app.engine_process`.

The engine is ``python -m loadout serve MODEL --launch-spec FILE --ready-json``, or, to
serve every model of the library, ``loadout serve --library --keep MODEL`` (with
``--models-dir`` for each model folder added in Settings). Loading
binds 127.0.0.1 on a free port; serving to other devices binds 0.0.0.0 and always with an
API key (the app generates one; there is no way to bind off loopback without).

Every engine the app starts also gets a private key of its own (:func:`key_environment`):
the app's client always sends it, and until the Server switch is on the engine answers
nothing else, loopback included. The switch flips that at run time (no restart).
"""

from __future__ import annotations

import logging
import secrets
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.launch import LaunchSpec, spec_of_plan, write_spec_file
from engine.launch import safer_spec as safer_spec  # where the app found it before
from engine.server.security import API_KEY_ENV, APP_KEY_ENV, APP_PUBLIC_ENV
from planner.plan_types import Plan
from planner.request import KV_TYPES

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
ANY_ADDRESS = "0.0.0.0"
KEY_PREFIX = "sk-loadout-"


class KeyRequiredError(ValueError):
    """Serving to other devices was asked for without an API key."""


def new_api_key() -> str:
    """A fresh random API key (256 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Binding:
    """Where the engine listens and which key it wants.

    Attributes:
        lan: listen on every interface (other devices may connect); needs ``api_key``.
        port: the port (0: a free one, picked at start).
        api_key: the key clients send (None: none, only allowed on loopback).
        public: clients other than the app are served (the Server switch); changing
            only this needs no restart.
    """

    lan: bool = False
    port: int = 0
    api_key: str | None = None
    public: bool = False

    def __post_init__(self) -> None:
        if self.lan and not self.api_key:
            raise KeyRequiredError("serving to other devices needs an API key")

    @property
    def host(self) -> str:
        """The address to bind."""
        return ANY_ADDRESS if self.lan else LOOPBACK


def needs_restart(running: Binding, wanted: Binding, running_port: int) -> bool:
    """Whether the engine must restart to listen as ``wanted`` asks (it runs as
    ``running``, on ``running_port``)."""
    if running.lan != wanted.lan or running.api_key != wanted.api_key:
        return True
    return wanted.port not in (0, running_port)


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port free on ``host`` now (known before the engine prints its ready line, so
    the load's progress can be followed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def lan_address() -> str | None:
    """This machine's address on its local network (no packet is sent), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 1))
            address = str(sock.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") or address == ANY_ADDRESS else address


def launch_spec_from_plan(model_path: Path, plan: object) -> LaunchSpec:
    """The LaunchSpec of a Plan (:func:`engine.launch.spec_of_plan`), or of a plan
    document's ``engine`` object.

    Raises:
        TypeError: ``plan`` is neither.
    """
    if isinstance(plan, Plan):
        return spec_of_plan(model_path, plan)
    if isinstance(plan, Mapping):
        return LaunchSpec.from_plan_engine(str(model_path), plan.get("engine") or {})
    raise TypeError(f"not a plan: {type(plan).__name__}")


def write_spec(spec: LaunchSpec, folder: Path) -> Path:
    """Write ``spec`` for ``loadout serve --launch-spec`` (:func:`engine.launch.write_spec_file`,
    read back there by :func:`engine.launch.read_spec_file`)."""
    return write_spec_file(spec, folder)


def serve_arguments(spec_file: Path, model_path: str, binding: Binding, port: int
                    ) -> list[str]:
    """The engine's arguments (after ``sys.executable``). The key is not among them: it
    goes through the environment (:func:`key_environment`), out of other users' sight."""
    return ["-m", "loadout", "serve", model_path, "--launch-spec", str(spec_file),
            "--host", binding.host, "--port", str(port), "--ready-json"]


def library_folders() -> tuple[Path, ...]:
    """The model folders added in Settings (part of the library the app serves)."""
    from app.settings_store import load_settings

    return tuple(Path(f).expanduser() for f in load_settings().model_folders)


def library_arguments(spec: LaunchSpec, keep: str | None, binding: Binding, port: int,
                      folders: tuple[Path, ...] | None = None) -> list[str]:
    """The arguments of an engine that serves every model of the library (``loadout serve
    --library``, with ``--models-dir`` for each of ``folders``: default, the model folders
    of Settings), each on demand with ``spec``'s context and slots; ``keep`` (a model id)
    stays loaded, with ``spec``'s GPU layers and KV type (the Plan page's, for that model
    alone: the router plans each other model itself). The key goes as
    :func:`serve_arguments` says."""
    args = ["-m", "loadout", "serve", "--library"]
    if keep:
        args += ["--keep", keep]
        if spec.n_gpu_layers >= 0:  # -1: no plan said (the router's own choice)
            args += ["--model-ngl", f"{keep}={spec.n_gpu_layers}"]
        kv = str(spec.type_k)
        if kv == str(spec.type_v) and kv in KV_TYPES:
            args += ["--model-kv-type", f"{keep}={kv}"]
    for folder in library_folders() if folders is None else folders:
        args += ["--models-dir", str(folder)]
    args += ["--ctx", str(spec.n_ctx_per_seq), "--parallel", str(spec.n_seq_max)]
    if spec.n_threads:
        args += ["--threads", str(spec.n_threads)]
    return [*args, "--host", binding.host, "--port", str(port), "--ready-json"]


def library_model_id(model_path: str | Path, folders: tuple[Path, ...] | None = None
                     ) -> str | None:
    """The id ``loadout serve --library`` gives the model at ``model_path`` (None: that
    file is not in the library; ``folders`` as :func:`library_arguments` takes them). The
    engine builds the same catalog the same way."""
    from engine.server.model_catalog import library_models

    real = Path(model_path).resolve()
    extra = library_folders() if folders is None else folders
    return next((m.id for m in library_models(extra) if m.path.resolve() == real), None)


def key_environment(binding: Binding, app_key: str | None = None) -> dict[str, str]:
    """The environment variables that hand the engine its API key, the app's private key
    and whether it starts public (empty: none, even if the app's own environment names
    one)."""
    return {API_KEY_ENV: binding.api_key or "", APP_KEY_ENV: app_key or "",
            APP_PUBLIC_ENV: "1" if binding.public else ""}


def python_executable() -> str:
    """The interpreter that runs the engine: the app's own, or in a frozen bundle its
    console executable (``loadout-cli`` beside the windowed ``Loadout`` on Windows and
    macOS), whose standard output and error are the pipes the app reads; it takes the
    same ``-m`` arguments."""
    if getattr(sys, "frozen", False):
        from engine.engine_select import loadout_command

        return loadout_command()[0]
    return sys.executable
