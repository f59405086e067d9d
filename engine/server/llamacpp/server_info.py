"""llama-server's routes about the server itself: ``GET /props``, ``GET /slots``,
``POST /apply-template`` and ``POST /chat/completions/input_tokens``.

``/props`` names the model by its file name, never its folder (a path tells a client
about the machine). ``/slots`` shows each slot's state and context, not the text it
holds; ``--no-slots`` turns it off (501, as llama-server).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engine.requests import GenerationRequest, SamplingParams
from engine.server import openai_schema as oa
from engine.server.api_common import RouteKit
from engine.server.errors import ApiError
from engine.server.generation import GenContext
from engine.server.llamacpp.native_docs import generation_settings
from engine.server.llamacpp.options import LlamaOptions
from engine.server.messages_api import count_tokens
from engine.server.request_model import RequestLimits

NOT_SUPPORTED = "not_supported_error"  # llama-server's error type for a route turned off


def not_supported(message: str) -> ApiError:
    """llama-server's 501 for a route that is turned off or not available."""
    return ApiError(501, message, code="not_supported", err_type=NOT_SUPPORTED)


def _slots(status: Mapping[str, Any], n_ctx: int, in_flight: int) -> list[dict[str, Any]]:
    """llama-server's slot documents. A slot is processing while the engine's snapshot
    says so and a request is being answered (the snapshot may lag a request's end by a
    decode step; the count of requests in flight does not)."""
    out = []
    for i, slot in enumerate(status.get("slots") or ()):
        busy = slot.get("state") not in (None, "idle") and in_flight > 0
        out.append({"id": i, "id_task": -1, "n_ctx": n_ctx, "speculative": False,
                    "is_processing": busy, "state": slot.get("state"),
                    "n_tokens": slot.get("tokens", 0),
                    "next_token": [{"has_next_token": busy, "has_new_line": False,
                                    "n_remain": -1, "n_decoded": int(
                                        slot.get("generated") or 0) if busy else 0}]})
    return out


def info_routes(ctx: GenContext, limits: RequestLimits, kit: RouteKit,
                llama: LlamaOptions) -> list[Route]:
    """The four routes, answering as llama-server does."""
    state = ctx.state

    async def props(request: Request) -> Response:
        engine, served = state.require()
        status = engine.status() or {}
        params = SamplingParams(**limits.sampling_defaults)
        n_slots = len(status.get("slots") or ()) or 1
        settings = generation_settings(params, served.id, served.n_ctx_per_seq, 0)
        settings["n_predict"] = -1 if limits.max_tokens >= 1 << 31 else limits.max_tokens
        path = str(status.get("model_path") or "")
        return kit.json({
            "default_generation_settings": {"id": 0, "id_task": -1,
                                            "n_ctx": served.n_ctx_per_seq,
                                            "speculative": False, "is_processing": False,
                                            "params": settings},
            "total_slots": n_slots, "model_alias": served.id,
            "model_path": Path(path).name if path else served.id,
            "modalities": {"vision": served.vision_refusal is None, "audio": False},
            "chat_template": getattr(engine, "chat_template", None) or "",
            "endpoint_slots": llama.slots_endpoint, "endpoint_metrics": llama.metrics,
            "build_info": "loadout", "is_sleeping": False,
        })

    async def slots(request: Request) -> Response:
        if not llama.slots_endpoint:
            raise not_supported("this server does not serve /slots (it was started with "
                                "--no-slots)")
        engine, served = state.require()
        return kit.json(_slots(engine.status() or {}, served.n_ctx_per_seq, state.in_flight))

    async def slot_action(request: Request) -> Response:
        raise not_supported("saving, restoring and erasing slots is not available in "
                            "Loadout")

    async def apply_template(request: Request) -> Response:
        body = await kit.read_json(request)
        engine, served = state.require()
        parsed = await kit.parse(oa.parse_chat, _no_stream(body), served, limits)
        add_prompt = oa.boolean(body, "add_generation_prompt", True)
        generation = parsed.generation
        try:
            prompt = await asyncio.to_thread(engine.render_chat, generation.messages or (),
                                             generation.tools, add_prompt)
        except ValueError as exc:
            raise ApiError(400, f"the chat template could not render these messages: "
                                f"{exc}", param="messages", code="template_error") from exc
        return kit.json({"prompt": prompt + generation.assistant_prefix})

    async def input_tokens(request: Request) -> Response:
        body = await kit.read_json(request)
        engine, served = state.require()
        parsed = await kit.parse(oa.parse_chat, _no_stream(body), served, limits)
        n = await asyncio.to_thread(count_tokens, engine, parsed.generation)
        return kit.json({"input_tokens": n})

    routes = [Route("/props", props, methods=["GET"]),
              Route("/slots", slots, methods=["GET"]),
              Route("/slots/{id_slot}", slot_action, methods=["POST"]),
              Route("/chat/completions/input_tokens", input_tokens, methods=["POST"]),
              Route("/v1/chat/completions/input_tokens", input_tokens, methods=["POST"])]
    routes += [Route(p, apply_template, methods=["POST"])
               for p in ("/apply-template", "/v1/apply-template")]
    return routes


async def rendered_prompt(engine: Any, generation: GenerationRequest) -> dict[str, Any]:
    """``__verbose``: the prompt a chat request was rendered to, as the engine renders it
    (llama-server's debug echo; it is the client's own text)."""
    try:
        prompt = await asyncio.to_thread(engine.render_chat, generation.messages or (),
                                         generation.tools, generation.add_generation_prompt)
    except ValueError:
        return {"prompt": None}
    return {"prompt": prompt + generation.assistant_prefix}


def _no_stream(body: Any) -> Any:
    """The body read as a chat request that is not streamed (only its prompt matters)."""
    if isinstance(body, Mapping):
        return {**body, "stream": False}
    return body
