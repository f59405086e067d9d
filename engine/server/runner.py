"""Running the server: bind, load the model in the background, serve until stopped.

The socket is bound first (a busy port fails at once, before a long load), uvicorn
starts answering (``/health`` says ``loading`` with the progress), the model loads on a
helper thread, and once it is ready one line goes to stdout: the base URL, and the API
key when one was generated (the only time it is shown). With ``ready_json`` that line is
a JSON document for the desktop app.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from engine.errors import EngineError, OutOfMemoryError
from engine.launch import LaunchSpec
from engine.server.app import ServerState, build_app
from engine.server.connections import DEFAULT_CONNECTION_LIMITS, ConnectionLimits, http_protocol
from engine.server.grammar_probe import GrammarProbe
from engine.server.llamacpp.options import DEFAULT_LLAMA_OPTIONS, LlamaOptions
from engine.server.request_model import DEFAULT_REQUEST_LIMITS, RequestLimits
from engine.server.security import DEFAULT_MAX_BODY_BYTES, AppAccess, SecurityPolicy, is_loopback

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServeOptions:
    """Everything ``loadout serve`` was asked for.

    Attributes:
        spec: what llama.cpp loads (``n_seq_max`` is the number of parallel slots).
        host, port: where to listen (port 0: any free port, shown in the ready line).
        api_key: the key clients must send; generated when binding off loopback.
        cors_origins: origins allowed by CORS (none: CORS off).
        queue_size: requests that may wait for a slot before 503.
        max_body_bytes: largest request body.
        ready_json: print the ready line as JSON.
        aliases: extra names accepted in a request's ``model`` field.
        model_id: the id shown by ``/v1/models`` (default: the model's own name).
        allowed_hosts: extra names a request's ``Host`` may carry (``*``: any).
        limits: request sizes, stop strings and the grammar budget.
        connections: connection count and read timeouts.
        replan: after a load ran out of memory, the spec to load instead (None: give up);
            ``loadout serve`` re-plans with the GPU that ran out shrunk.
        app_key: the desktop app's private key for its own engine (accepted everywhere);
            with it, other clients are served only while ``app_public`` (the app switches
            it at run time).
        embeddings: serve ``/v1/embeddings`` with a chat model too (an embedding model
            always serves them).
        llama: what llama-server's flags asked for (endpoints, tags, more addresses).
    """

    spec: LaunchSpec
    host: str = "127.0.0.1"
    port: int = 8080
    api_key: str | None = None
    cors_origins: tuple[str, ...] = ()
    queue_size: int = 64
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    ready_json: bool = False
    aliases: tuple[str, ...] = ()
    model_id: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    limits: RequestLimits = DEFAULT_REQUEST_LIMITS
    connections: ConnectionLimits = DEFAULT_CONNECTION_LIMITS
    replan: Callable[[Exception], LaunchSpec | None] | None = None
    app_key: str | None = None
    app_public: bool = False
    embeddings: bool = False
    llama: LlamaOptions = DEFAULT_LLAMA_OPTIONS


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv4 or IPv6 by the address's form).

    Raises:
        OSError: the address is in use or cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if sys.platform != "win32":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def base_url(sock: socket.socket, host: str) -> str:
    """``http://HOST:PORT`` of a bound socket (a wildcard host shown as loopback)."""
    port = sock.getsockname()[1]
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    if ":" in shown:
        shown = f"[{shown.strip('[]')}]"
    return f"http://{shown}:{port}"


def ready_message(url: str, model: str, policy: SecurityPolicy, as_json: bool) -> str:
    """The one line printed when the server is ready."""
    key = policy.api_key if policy.key_generated else None
    if as_json:
        doc: dict[str, Any] = {"event": "ready", "url": url, "base_url": f"{url}/v1",
                               "model": model, "api_key": key,
                               "auth": policy.api_key is not None}
        return json.dumps(doc)
    line = f"Loadout serving {model} at {url}/v1 (OpenAI-compatible)"
    if key:
        line += f"\nAPI key (shown once): {key}"
    return line


def _bind_all(hosts: tuple[str, ...], port: int) -> list[socket.socket]:
    """A listening socket on each address (``--host a,b``), all on one port: the first
    one's when ``port`` is 0. Closes what it bound when one fails.

    Raises:
        OSError: an address is in use or cannot be bound.
    """
    sockets: list[socket.socket] = []
    try:
        for host in hosts:
            sockets.append(bind_socket(host, sockets[0].getsockname()[1] if sockets
                                       else port))
    except OSError:
        for bound in sockets:
            bound.close()
        raise
    return sockets


MAX_LOADS = 3  # the first load and two re-plans after running out of memory


def _load_engine(options: ServeOptions, state: ServerState, stopping: threading.Event,
                 on_ready: Callable[[str], None], on_error: Callable[[str], None]) -> None:
    from engine.embedding_engine import EmbeddingEngine, open_engine

    def progress(value: float) -> bool:
        state.load_progress = value
        return not stopping.is_set()

    spec = options.spec
    try:
        for attempt in range(MAX_LOADS):
            try:
                engine = open_engine(spec, queue_size=options.queue_size, progress=progress,
                                     embeddings=options.embeddings)
                break
            except OutOfMemoryError as exc:
                smaller = options.replan(exc) if options.replan and attempt + 1 < MAX_LOADS \
                    else None
                if smaller is None or stopping.is_set():
                    raise
                log.warning("the load ran out of memory (%s); loading a re-plan", exc)
                spec = smaller
    except EngineError as exc:
        state.fail(str(exc))
        on_error(str(exc))
        return
    except Exception as exc:  # report, never leave the server answering "loading"
        log.exception("model load failed")
        state.fail(f"{type(exc).__name__}: {exc}")
        on_error(f"{type(exc).__name__}: {exc}")
        return
    if stopping.is_set():
        engine.close()
        return
    if options.llama.chat_template and hasattr(engine, "use_chat_template"):
        engine.use_chat_template(options.llama.chat_template)
    state.attach(engine)
    # an embedding model refuses chat and completions: no grammar to check
    state.grammar_probe = None if isinstance(engine, EmbeddingEngine) \
        else _grammar_probe(options.spec.model_path)
    assert state.served is not None
    on_ready(state.served.id)


def _grammar_probe(model_path: str) -> GrammarProbe | None:
    """The started grammar checker, or None (logged) when it cannot start."""
    probe = GrammarProbe(model_path)
    try:
        probe.start()
    except (OSError, RuntimeError):
        log.warning("the grammar checker did not start; grammars are used unchecked",
                    exc_info=True)
        return None
    return probe


@contextlib.contextmanager
def _signals_end_cleanly() -> Iterator[None]:
    """Let SIGINT/SIGTERM end ``serve`` by returning, so the engine is closed and the exit
    code is 0: uvicorn shuts down gracefully, then re-raises the signal to the handler it
    found, which is this one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def note(sig: int, _frame: object) -> None:
        log.info("signal %d: shutting down", sig)

    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(options: ServeOptions, out: TextIO | None = None) -> int:
    """Serve until interrupted (SIGINT / SIGTERM). Returns the process exit code.

    Raises:
        OSError: the address cannot be bound.
    """
    import uvicorn

    stdout = out or sys.stdout
    hosts = (options.host, *options.llama.extra_hosts)
    # a key is needed when any address is off loopback
    key_host = next((h for h in hosts if not is_loopback(h)), options.host)
    policy = SecurityPolicy.resolve(key_host, options.api_key, options.cors_origins,
                                    options.max_body_bytes, options.allowed_hosts)
    state = ServerState(model_id=options.model_id, aliases=options.aliases)
    state.tags, state.alias_names = options.llama.tags, options.llama.aliases
    conn = options.connections
    access = AppAccess(options.app_key, options.app_public)
    app = build_app(state, policy, options.limits, conn, access, llama=options.llama)
    sockets = _bind_all(hosts, options.port)
    sock = sockets[0]
    url = base_url(sock, options.host)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=3,
                            timeout_keep_alive=max(1, round(conn.keep_alive_s)),
                            http=http_protocol(conn, access.is_app),
                            h11_max_incomplete_event_size=64 * 1024)
    server = uvicorn.Server(config)
    stopping = threading.Event()
    failed: list[str] = []

    def on_ready(model: str) -> None:
        print(ready_message(url, model, policy, options.ready_json), file=stdout, flush=True)

    def on_error(message: str) -> None:
        failed.append(message)
        if options.ready_json:
            print(json.dumps({"event": "error", "error": message}), file=stdout, flush=True)
        server.should_exit = True

    loader = threading.Thread(target=_load_engine, name="loadout-load", daemon=True,
                              args=(options, state, stopping, on_ready, on_error))
    loader.start()
    try:
        with _signals_end_cleanly():
            server.run(sockets=sockets)
    finally:
        stopping.set()
        loader.join()
        engine = state.engine
        close = getattr(engine, "close", None)
        if close is not None:
            close()
        if state.grammar_probe is not None:
            state.grammar_probe.close()
        for bound in sockets:
            bound.close()
    if failed:
        print(f"loadout serve: the model failed to load: {failed[0]}", file=sys.stderr)
        return 1
    return 0
