"""llama-server's flags on ``loadout serve``, with llama-server's meaning.

A command line written for ``llama-server`` starts ``loadout serve`` unchanged: the
model as ``-m/--model``, ``-c/--ctx-size`` as the WHOLE cache shared by the ``-np``
slots (Loadout's own ``--ctx`` stays the context of one sequence), the sampling defaults
(``--temp``, ``--seed``, ``-n``), the batch sizes, the endpoints switched on and off
(``--slots``, ``--metrics``), ``--alias a,b`` and ``--tags``, ``--cors-origins`` and
``--host a,b``. Flags that have no work to do in Loadout (``--offline``: serve never
downloads; ``--no-ui``: there is no web UI; ``--cont-batching``: always on) are
accepted and change nothing; docs/server.md lists each flag with its status.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from engine.server.llamacpp.options import LlamaOptions

S = argparse.SUPPRESS
FA_MODES = ("on", "off", "auto")
POOLING = ("none", "mean", "cls", "last", "rank")


def register(p: Any) -> None:
    """Add llama-server's flags to the ``serve`` parser (most in their own group)."""
    g = p.add_argument_group("llama-server's flags (see docs/server.md)")
    g.add_argument("-m", "--model", dest="model_flag", default=None, metavar="PATH",
                   help="the model (as MODEL)")
    g.add_argument("-c", "--ctx-size", dest="ctx_total", type=int, default=None,
                   metavar="N", help="llama-server's -c: the context of ALL slots together "
                                     "(each of the -np slots gets N / np); --ctx is per slot")
    g.add_argument("-np", dest="parallel", type=int, default=S, help="as --parallel")
    g.add_argument("-t", dest="threads", type=int, default=S, help="as --threads")
    g.add_argument("-ngl", "--n-gpu-layers", "--gpu-layers", dest="ngl", type=int,
                   default=S, help="as --ngl")
    g.add_argument("-ctk", "--cache-type-k", dest="cache_type_k", default=None,
                   help="KV cache type (as --kv-type)")
    g.add_argument("-ctv", "--cache-type-v", dest="cache_type_v", default=None,
                   help="KV cache type of V (Loadout uses one type for K and V)")
    g.add_argument("--temp", "--temperature", dest="default_temp", type=float, default=None,
                   help="the temperature of requests that name none")
    g.add_argument("-s", "--seed", dest="default_seed", type=int, default=None,
                   help="the seed of requests that name none (-1: random)")
    g.add_argument("-n", "--n-predict", "--predict", dest="n_predict", type=int, default=None,
                   help="the most tokens one answer gets: a request asking more is "
                        "capped (-1: no cap)")
    g.add_argument("-b", "--batch-size", dest="batch", type=int, default=None,
                   help="tokens per prompt batch (llama.cpp's n_batch)")
    g.add_argument("-ub", "--ubatch-size", dest="ubatch", type=int, default=None,
                   help="llama.cpp's physical batch (n_ubatch)")
    g.add_argument("--slots", dest="slots_endpoint", action="store_true", default=True,
                   help="serve GET /slots (the default)")
    g.add_argument("--no-slots", dest="slots_endpoint", action="store_false",
                   help="GET /slots answers 501, as llama-server")
    g.add_argument("--metrics", dest="metrics", action="store_true", default=True,
                   help="serve GET /metrics (Loadout's default)")
    g.add_argument("--no-metrics", dest="metrics", action="store_false",
                   help="no /metrics endpoint")
    g.add_argument("--jinja", dest="jinja", action="store_true", default=True,
                   help="render chats with the Jinja template (always)")
    g.add_argument("--no-jinja", dest="jinja", action="store_false",
                   help="accepted: Loadout always renders the GGUF's Jinja template")
    g.add_argument("--chat-template", dest="chat_template", default=None, metavar="JINJA",
                   help="a Jinja chat template used instead of the GGUF's")
    g.add_argument("--chat-template-file", dest="chat_template_file", default=None,
                   metavar="FILE", help="the same, read from FILE")
    g.add_argument("--pooling", choices=POOLING, default=None,
                   help="embeddings' pooling (Loadout: mean for a chat model, the "
                        "model's own for an embedding model)")
    g.add_argument("-kvu", "--kv-unified", dest="kv_unified", action="store_true",
                   default=False, help="one KV buffer shared by all slots")
    g.add_argument("--swa-full", dest="swa_full", action="store_true", default=False,
                   help="full-size cache for sliding-window layers")
    g.add_argument("-fa", "--flash-attn", dest="flash_attn", choices=FA_MODES, default=None,
                   help="flash attention (default: the plan's)")
    g.add_argument("--context-shift", dest="context_shift", action="store_true",
                   default=False, help="accepted; an answer that fills its context ends "
                                       "with finish_reason 'length'")
    g.add_argument("--no-context-shift", dest="context_shift", action="store_false")
    g.add_argument("-v", "--verbose", dest="verbose", action="store_true", default=False,
                   help="log at debug level")
    g.add_argument("--no-models-autoload", dest="no_models_autoload", action="store_true",
                   default=False, help="a router loads a model only when asked to")
    g.add_argument("--embedding", dest="embeddings", action="store_true", default=S,
                   help="as --embeddings")
    g.add_argument("--cors-origins", dest="cors_origins", default=None, metavar="LIST",
                   help="comma-separated origins (as --cors; 'localhost': any loopback "
                        "origin, '*': any)")
    g.add_argument("--tags", dest="tags", default=None, metavar="LIST",
                   help="comma-separated tags listed with the model in /v1/models")
    for flag in ("--offline", "--no-ui", "--cont-batching", "-cb", "--no-webui"):
        g.add_argument(flag, dest="ignored_flags", action="append_const", const=flag,
                       default=S, help="accepted; nothing to do in Loadout")
    g.add_argument("--media-path", dest="media_path", default=None, metavar="DIR",
                   help="accepted; Loadout reads no local files for a request (file:// "
                        "image URLs are refused)")


def _split(values: list[str] | str | None) -> list[str]:
    items = [values] if isinstance(values, str) else list(values or [])
    return [part.strip() for item in items for part in item.split(",") if part.strip()]


def normalise(args: argparse.Namespace) -> LlamaOptions:
    """Fold llama-server's flags into Loadout's own (``args`` is changed in place) and
    return the rest.

    Raises:
        SystemExit: flags that contradict each other, with the reason.
    """
    if args.model_flag is not None:
        if args.model is not None and args.model != args.model_flag:
            raise SystemExit("loadout serve: give the model once (MODEL or -m/--model)")
        args.model = args.model_flag
    if args.cache_type_k or args.cache_type_v:
        k, v = args.cache_type_k or args.cache_type_v, args.cache_type_v or args.cache_type_k
        if k.lower() != v.lower():
            raise SystemExit("loadout serve: -ctk and -ctv differ; Loadout uses one KV type "
                             "for K and V (--kv-type)")
        args.kv_type = args.kv_type or k
    hosts = _split(args.host)
    if not hosts:
        raise SystemExit("loadout serve: --host names no address")
    args.host = hosts[0]
    args.alias = _split(args.alias)
    args.cors = list(args.cors) + _split(args.cors_origins)
    template = args.chat_template
    if args.chat_template_file:
        from pathlib import Path

        try:
            template = Path(args.chat_template_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise SystemExit(f"loadout serve: --chat-template-file: {exc}") from None
    if template is not None and "{%" not in template and "{{" not in template:
        from engine.server.llamacpp.templates import NAMED, named_template

        named = named_template(template)
        if named is None:
            raise SystemExit(f"loadout serve: --chat-template {template}: not a Jinja "
                             f"template nor a known name ({', '.join(sorted(NAMED))})")
        template = named
    if args.verbose:
        logging.getLogger().setLevel(logging.DEBUG)
    ctx_total = args.ctx_total if args.ctx_total and args.ctx_total > 0 else None
    if ctx_total is not None:
        args.ctx = max(64, ctx_total // max(1, args.parallel))
    defaults: dict[str, Any] = {}
    if args.default_temp is not None:
        defaults["temperature"] = max(0.0, args.default_temp)
    if args.default_seed is not None and args.default_seed >= 0:
        defaults["seed"] = args.default_seed
    return LlamaOptions(slots_endpoint=args.slots_endpoint, metrics=args.metrics,
                        tags=tuple(_split(args.tags)), extra_hosts=tuple(hosts[1:]),
                        ctx_total=ctx_total, batch=args.batch, ubatch=args.ubatch,
                        flash_attn=args.flash_attn, kv_unified=args.kv_unified,
                        swa_full=args.swa_full, chat_template=template,
                        context_shift=args.context_shift, pooling=args.pooling,
                        defaults=defaults, aliases=tuple(args.alias))


def spec_changes(options: LlamaOptions, spec: Any) -> Any:
    """The LaunchSpec with the cache and batch flags applied (the plan's otherwise)."""
    from engine.launch import FlashAttn

    changes: dict[str, Any] = {}
    if options.batch:
        changes["n_batch"] = max(1, options.batch)
    if options.ubatch:
        changes["n_ubatch"] = max(1, options.ubatch)
    if "n_batch" in changes or "n_ubatch" in changes:
        n_batch = changes.get("n_batch", spec.n_batch)
        changes["n_ubatch"] = min(changes.get("n_ubatch", spec.n_ubatch), n_batch)
    if options.flash_attn is not None:
        changes["flash_attn"] = FlashAttn(options.flash_attn)
    if options.kv_unified:
        changes["kv_unified"] = True
    if options.swa_full:
        changes["swa_full"] = True
    return spec.with_changes(**changes) if changes else spec
