"""Every llama.cpp native route, for :func:`engine.server.app.build_app` to put first."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from engine.server.api_common import RouteKit
from engine.server.generation import GenContext
from engine.server.llamacpp.completion_api import completion_routes
from engine.server.llamacpp.metrics import LlamaMetrics
from engine.server.llamacpp.options import LlamaOptions
from engine.server.llamacpp.server_info import info_routes, not_supported
from engine.server.request_model import RequestLimits

# as the request counter labels them (it prefixes /v1 to a path without it)
NATIVE_PATHS = ("/v1/completion", "/v1/props", "/v1/slots", "/v1/apply-template",
                "/v1/chat/completions/input_tokens")


def llama_routes(ctx: GenContext, limits: RequestLimits, kit: RouteKit,
                 llama: LlamaOptions) -> list[Route]:
    """``/completion(s)``, ``/props``, ``/slots``, ``/apply-template``,
    ``/chat/completions/input_tokens`` and ``/metrics`` (Loadout's families with
    llama-server's beside them; 501 with ``--no-metrics``)."""
    LlamaMetrics(ctx.metrics, lambda: ctx.state.in_flight)
    started = str(int(ctx.state.started))

    async def metrics(request: Request) -> Response:
        if not llama.metrics:
            raise not_supported("this server does not serve /metrics (it was started "
                                "with --no-metrics)")
        return PlainTextResponse(ctx.metrics.render(),
                                 media_type=ctx.metrics.registry.CONTENT_TYPE,
                                 headers={"Process-Start-Time-Unix": started})

    return [Route("/metrics", metrics, methods=["GET"]),
            *completion_routes(ctx, limits, kit), *info_routes(ctx, limits, kit, llama)]
