"""Running a router: bind, start answering, load the pinned models, serve until stopped.

The ready line comes as soon as the server answers (models load on demand); its model is
the first one kept loaded (``--keep``), else the first served; with ``ready_json`` it is a
JSON document that also lists every model id.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, TextIO

from engine.server.app import ServerState, build_app
from engine.server.connections import http_protocol
from engine.server.router import Router
from engine.server.runner import (
    ServeOptions,
    _signals_end_cleanly,
    base_url,
    bind_socket,
    ready_message,
)
from engine.server.security import AppAccess, SecurityPolicy

log = logging.getLogger(__name__)


class _Lifespan:
    """ASGI wrapper: starts the router when the server starts, stops its loads when the
    server stops; every other scope goes to the app."""

    def __init__(self, app: Any, router: Router, on_started: Any) -> None:
        self.app = app
        self.router = router
        self.on_started = on_started

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.router.start()
                self.on_started()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.router.stopping()
                await send({"type": "lifespan.shutdown.complete"})
                return


def serve_router(router: Router, options: ServeOptions, out: TextIO | None = None) -> int:
    """Serve ``router``'s models until interrupted. ``options.spec``, ``replan``,
    ``model_id`` and ``aliases`` are not used (each model has its own).

    Raises:
        OSError: the address cannot be bound.
    """
    import uvicorn

    stdout = out or sys.stdout
    policy = SecurityPolicy.resolve(options.host, options.api_key, options.cors_origins,
                                    options.max_body_bytes, options.allowed_hosts)
    state = ServerState(router=router)
    conn = options.connections
    access = AppAccess(options.app_key, options.app_public)
    app = build_app(state, policy, options.limits, conn, access)
    sock = bind_socket(options.host, options.port)
    url = base_url(sock, options.host)
    ids = router.ids()
    # the model a client reading the ready line should ask for: the first one kept loaded
    first = next((i for i in ids if router.models[i].pinned), ids[0] if ids else "")

    def on_started() -> None:
        line = ready_message(url, first, policy, options.ready_json)
        if options.ready_json:
            doc = json.loads(line)
            doc["models"] = ids
            line = json.dumps(doc)
        else:
            line = line.replace(f"serving {first} ",
                                f"serving {len(ids)} models ({', '.join(ids)}) ", 1)
        print(line, file=stdout, flush=True)

    config = uvicorn.Config(_Lifespan(app, router, on_started), log_level="warning",
                            access_log=False, lifespan="on", timeout_graceful_shutdown=3,
                            timeout_keep_alive=max(1, round(conn.keep_alive_s)),
                            http=http_protocol(conn, access.is_app),
                            h11_max_incomplete_event_size=64 * 1024)
    server = uvicorn.Server(config)
    try:
        with _signals_end_cleanly():
            server.run(sockets=[sock])
    finally:
        router.stop()
        sock.close()
    return 0
