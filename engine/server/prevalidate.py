"""A router checks a request before it chooses (and perhaps loads) the model it names.

Loading a model takes seconds and may unload another: a malformed request must never
cause one. :func:`prevalidate` parses the body the way its route will, against what the
router knows of a model that is not loaded yet (its id and aliases; its context,
vocabulary and vision are not known, so those checks wait for the real parse after the
load), and answers the request's 400 without touching the model.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from engine.server import openai_schema as oa
from engine.server.images import image_parts, part_url
from engine.server.openai_schema import ParsedRequest, ServedModel
from engine.server.request_model import RequestLimits

if TYPE_CHECKING:
    from engine.server.router import RoutedModel
    from engine.server.state import ServerState

Parse = Callable[[Any, Any, ServedModel, RequestLimits], Awaitable[ParsedRequest]]

# a 1x1 PNG standing in for an image URL that is fetched only after the model is chosen
_PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR4"
          "nGNgYAAAAAMAASsJTYQAAAAASUVORK5CYII=")
_ANY_CONTEXT = 1 << 31


def grammar_field_of(body: Any) -> str | None:
    """The field whose grammar a request's parse builds (None: it builds none)."""
    if not isinstance(body, Mapping):
        return None
    if body.get("grammar") is not None:
        return "grammar"
    if body.get("response_format") is not None:
        return "response_format"
    if body.get("tools") and body.get("tool_choice") not in (None, "none", "auto"):
        return "tools"
    return None


def provisional_model(entry: RoutedModel) -> ServedModel:
    """What is known of a model before its load: its names; nothing is refused for what
    only the loaded model can tell (context, vocabulary, speculation, images)."""
    from engine.speculative import SPEC_MODES

    return ServedModel(id=entry.id, aliases=frozenset(entry.model.names()) - {entry.id},
                       n_ctx_per_seq=_ANY_CONTEXT, template_tools=True,
                       spec_modes=tuple(SPEC_MODES), vision_refusal=None)


def _without_remote_images(chat: Any) -> Any:
    """``chat`` with each ``http(s)`` image URL replaced by a pixel (a copy when any)."""
    remote = [w for w, p in image_parts(chat)
              if part_url(p, w).lower().startswith(("http:", "https:"))]
    if not remote:
        return chat
    chat = copy.deepcopy(chat)
    for where, part in image_parts(chat):
        if part_url(part, where).lower().startswith(("http:", "https:")):
            part["image_url"] = {"url": _PIXEL}  # type: ignore[index]
    return chat


async def prevalidate(path: str, body: Any, state: ServerState, limits: RequestLimits,
                      parse: Parse) -> None:
    """Check ``body`` as a request to ``path`` for the (unloaded) model it names.

    Nothing is done when the model is loaded (its own parse follows at once) or when the
    body names no model of this router (the route answers 400 or 404).

    Raises:
        ApiError: the 4xx the route would answer once the model is loaded.
    """
    router = state.router
    name = body.get("model") if isinstance(body, Mapping) else None
    entry = router.find(name) if router is not None and isinstance(name, str) else None
    if entry is None or entry.served is not None:
        return
    served = provisional_model(entry)
    route = path.removeprefix("/v1")
    if route == "/chat/completions":
        await parse(oa.parse_chat, _without_remote_images(body), served, limits)
    elif route == "/completions":
        await parse(oa.parse_completion, body, served, limits)
    elif route in ("/responses", "/messages", "/messages/count_tokens"):
        chat = _translated(route, body, limits)
        await parse(oa.parse_chat, _without_remote_images(chat), served, limits)
    elif route == "/embeddings":
        from engine.server.embeddings_api import DEFAULT_EMBEDDING_LIMITS, parse_embedding_request

        parse_embedding_request(body, served, DEFAULT_EMBEDDING_LIMITS)
    elif route == "/tokenize":
        from engine.server.tokenize_api import DEFAULT_TOKENIZE_LIMITS, parse_tokenize

        parse_tokenize(body, DEFAULT_TOKENIZE_LIMITS)


def _translated(route: str, body: Any, limits: RequestLimits) -> Any:
    if route == "/responses":
        from engine.server.responses_input import to_chat as responses_chat

        return responses_chat(body, None, limits).chat
    from engine.server.messages_input import to_chat as messages_chat

    return messages_chat(body, limits, counting=route.endswith("count_tokens")).chat


__all__ = ["grammar_field_of", "prevalidate", "provisional_model"]
