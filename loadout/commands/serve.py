"""``loadout serve MODEL``: the engine process, an OpenAI-compatible HTTP server.

``loadout serve --models DIR`` / ``--library``: many models behind one server, loaded on
demand and kept resident by the planner (see ``engine.server.router``); ``--models-dir``
adds folders to the library (the app passes the model folders of its Settings).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from engine.server.security import APP_KEY_ENV, APP_PUBLIC_ENV
from loadout.commands import api_key, serve_llama_flags


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="serve a model over an OpenAI-compatible HTTP API")
    p.add_argument("model", nargs="?", default=None,
                   help="a .gguf path or 'demo' (default)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; any other needs a key)")
    p.add_argument("--port", type=int, default=8080, help="port (0: any free port)")
    p.add_argument("--parallel", type=int, default=4,
                   help="sequences decoded together (slots)")
    p.add_argument("--ctx", type=int, default=4096, help="context of each sequence (tokens)")
    api_key.add_arguments(p)
    p.add_argument("--cors", action="append", default=[], metavar="ORIGIN",
                   help="allow this browser origin (repeatable; CORS is off by default)")
    p.add_argument("--queue-size", type=int, default=64,
                   help="requests that may wait for a slot before 503")
    p.add_argument("--max-body-bytes", type=int, default=8 * 1024 * 1024)
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="another name clients may reach the server by (the Host header; "
                        "repeatable; '*' turns the check off)")
    p.add_argument("--max-connections", type=int, default=128,
                   help="requests served at once (past it: 503; idle and half-sent "
                        "connections do not count)")
    p.add_argument("--max-open-connections", type=int, default=768, metavar="N",
                   help="sockets open at once (past it the oldest idle one is closed)")
    p.add_argument("--header-timeout", type=float, default=5.0, metavar="S",
                   help="seconds a client has to send a request's headers")
    p.add_argument("--body-timeout", type=float, default=30.0, metavar="S",
                   help="seconds a client has to send a request's body")
    p.add_argument("--max-grammar-bytes", type=int, default=64 * 1024,
                   help="largest GBNF grammar a request may carry")
    p.add_argument("--max-schema-bound", type=int, default=512,
                   help="largest maxLength/minLength/maxItems/minItems a JSON schema may set")
    p.add_argument("--max-stop", type=int, default=8,
                   help="stop strings per request")
    p.add_argument("--max-stop-chars", type=int, default=128,
                   help="length of one stop string")
    p.add_argument("--max-tokens", type=int, default=None,
                   help="the most tokens one answer may have (default: the context)")
    p.add_argument("--threads", type=int, default=None, help="decode threads")
    p.add_argument("--ngl", type=int, default=None, help="layers on the GPU (-1: all)")
    p.add_argument("--kv-type", default=None, help="KV cache type (f16, q8_0, q4_0 ...)")
    p.add_argument("--launch-spec", type=Path, default=None, metavar="FILE",
                   help="a LaunchSpec JSON (from a Plan); overrides --ctx/--parallel")
    p.add_argument("--workers", default=None, metavar="HOST:PORT,...",
                   help="RPC workers ('loadout worker') whose devices the plan may use")
    p.add_argument("--no-plan", action="store_true",
                   help="skip the planner: every layer on the default device, f16 KV")
    p.add_argument("--no-warmup", action="store_true",
                   help="skip the warm-up decode after the load")
    p.add_argument("--mmproj", type=Path, default=None, metavar="FILE",
                   help="the model's vision projector (mmproj GGUF); default: the one "
                        "beside the model, if any")
    p.add_argument("--no-mmproj", action="store_true",
                   help="load no projector, even when one lies beside the model")
    p.add_argument("--no-mmproj-offload", action="store_true",
                   help="keep the projector on the CPU")
    p.add_argument("--allow-image-urls", action="store_true",
                   help="fetch http(s) image URLs in requests (default: data URLs only)")
    p.add_argument("--allow-private-image-urls", action="store_true",
                   help="with --allow-image-urls: also fetch from loopback, link-local and "
                        "private addresses (off: public addresses only; a client could make "
                        "the server reach its own network)")
    p.add_argument("--image-url-timeout", type=float, default=10.0, metavar="S",
                   help="seconds one image download may take")
    p.add_argument("--max-images", type=int, default=8, help="images per request")
    p.add_argument("--max-image-bytes", type=int, default=5 * 1024 * 1024,
                   help="size of one image file")
    p.add_argument("--max-image-pixels", type=int, default=4096 * 4096,
                   help="width x height of one image")
    p.add_argument("--alias", action="append", default=[],
                   help="another name accepted as the request's model (repeatable)")
    p.add_argument("--embeddings", action="store_true",
                   help="also serve /v1/embeddings with a chat model (mean of its last "
                        "layer's hidden states); an embedding model always serves them")
    p.add_argument("--ready-json", action="store_true",
                   help="print the ready line (URL, generated key) as one JSON document")
    many = p.add_argument_group("many models (a router)")
    many.add_argument("--models", type=Path, default=None, metavar="DIR",
                      help="serve every GGUF under DIR, each loaded on demand")
    many.add_argument("--library", action="store_true",
                      help="serve the demo and every GGUF of your library, on demand")
    many.add_argument("--models-dir", action="append", default=[], type=Path, metavar="DIR",
                      help="with --library: also every GGUF under DIR, as the app's model "
                           "folders (repeatable)")
    many.add_argument("--keep", action="append", default=[], metavar="MODEL",
                      help="keep this model loaded: loaded at start, never unloaded "
                           "(repeatable)")
    many.add_argument("--model-ngl", action="append", default=[], metavar="MODEL=N",
                      help="this model's GPU layers (repeatable; --ngl sets every model's)")
    many.add_argument("--model-kv-type", action="append", default=[], metavar="MODEL=TYPE",
                      help="this model's KV cache type: f16, q8_0 or q4_0 (repeatable; "
                           "--kv-type sets every model's)")
    many.add_argument("--idle-timeout", type=float, default=None, metavar="S",
                      help="unload a model idle this many seconds")
    many.add_argument("--models-max", type=int, default=None, metavar="N",
                      help="at most N models loaded at once (memory decides too)")
    many.add_argument("--min-residency", type=float, default=15.0, metavar="S",
                      help="a model with requests stays loaded at least S seconds before "
                           "another may unload it (default 15)")
    many.add_argument("--max-swaps", type=int, default=4, metavar="N",
                      help="at most N loads that unload another model per --swap-window "
                           "(past it: 503 with Retry-After; 0: no limit; default 4)")
    many.add_argument("--swap-window", type=float, default=60.0, metavar="S",
                      help="the window of --max-swaps, in seconds (default 60)")
    many.add_argument("--ram-budget", type=float, default=None, metavar="GIB",
                      help="RAM the loaded models may use together, in GiB (default: the "
                           "RAM available at start less the 5 GB reserve)")
    many.add_argument("--rig", type=Path, default=None, metavar="FILE",
                      help="plan residency for the machine in this rig file "
                           "('loadout detect --json')")
    # the server's own grammar checker child (engine.server.grammar_probe), started this way
    # so that a frozen bundle, which has no "python -m", can start it too
    p.add_argument("--grammar-checker", default=None, metavar="MODEL",
                   help=argparse.SUPPRESS)
    serve_llama_flags.register(p)


def _planned(args: argparse.Namespace, model_path: Path, ladder: Any = None) -> Any:
    from engine.planned_launch import plan_launch
    from loadout.commands.plan import worker_list

    pins = {"n_gpu_layers": None if args.ngl is None or args.ngl < 0 else args.ngl,
            "kv_type": args.kv_type.lower() if args.kv_type else None,
            "embedding_context": True if args.embeddings else None}
    projector = _projector_path(args, model_path)
    return plan_launch(str(model_path), context=max(64, args.ctx),
                       parallel=max(1, args.parallel), n_threads=args.threads, overrides=pins,
                       workers=worker_list(args.workers), ladder=ladder,
                       mmproj_path=str(projector) if projector else None,
                       mmproj_offload=not args.no_mmproj_offload)


def _replan(args: argparse.Namespace, model_path: Path, spec: Any, first: Any) -> Any:
    """After an out-of-memory load, the re-plan :class:`engine.launch.ReplanLadder` asks
    for; None when there is no plan to re-make."""
    from engine.launch import ReplanLadder

    if first is None:
        return None
    ladder = ReplanLadder()
    ladder.loading(spec, first)

    def replan(exc: Exception) -> Any:
        if ladder.exhausted:
            return None
        print(ladder.failed(exc), file=sys.stderr, flush=True)
        launch = _planned(args, model_path, ladder)
        if launch.plan is None:
            return None
        spec = launch.spec
        return spec.with_changes(warm_up=False) if args.no_warmup else spec

    return replan


def _spec_and_plan(args: argparse.Namespace, model_path: Path) -> tuple[Any, Any]:
    from engine.launch import read_spec_file, unplanned_spec

    if args.launch_spec is not None:
        return read_spec_file(args.launch_spec, model_path), None
    parallel = max(1, args.parallel)
    if not args.no_plan:
        launch = _planned(args, model_path)
        if launch.note:
            print(launch.note, file=sys.stderr, flush=True)
        if launch.plan is not None:
            return launch.spec, launch.plan
    pins = {"n_gpu_layers": args.ngl, "kv_type": args.kv_type}
    return unplanned_spec(model_path, max(64, args.ctx), parallel, args.threads, pins), None


def _limits(args: argparse.Namespace) -> tuple[Any, Any]:
    import dataclasses

    from engine.server.connections import ConnectionLimits
    from engine.server.grammar_budget import DEFAULT_LIMITS
    from engine.server.images import ImageLimits
    from engine.server.request_model import DEFAULT_REQUEST_LIMITS

    grammar = dataclasses.replace(DEFAULT_LIMITS, max_grammar_bytes=args.max_grammar_bytes,
                                  max_schema_bound=args.max_schema_bound)
    limits = dataclasses.replace(DEFAULT_REQUEST_LIMITS, max_stop_sequences=args.max_stop,
                                 max_stop_chars=args.max_stop_chars, grammar=grammar)
    if args.max_tokens is not None:
        limits = dataclasses.replace(limits, max_tokens=max(1, args.max_tokens))
    if getattr(args, "llama", None) is not None and args.llama.defaults:
        limits = dataclasses.replace(limits, sampling_defaults=dict(args.llama.defaults))
    if getattr(args, "n_predict", None) is not None and args.n_predict > 0:
        limits = dataclasses.replace(limits, cap_tokens=args.n_predict)  # -n caps
    if getattr(args, "verbose", False):  # llama-server's --verbose: answers echo prompts
        limits = dataclasses.replace(limits, echo_prompt=True)
    images = ImageLimits(max_images=max(0, args.max_images),
                         max_bytes=max(1, args.max_image_bytes),
                         max_pixels=max(1, args.max_image_pixels),
                         allow_urls=args.allow_image_urls,
                         allow_private_urls=args.allow_private_image_urls,
                         fetch_timeout_s=max(0.1, args.image_url_timeout))
    limits = dataclasses.replace(limits, images=images)
    conn = ConnectionLimits(max_connections=max(1, args.max_connections),
                            max_open=max(1, args.max_open_connections),
                            header_timeout_s=args.header_timeout,
                            body_timeout_s=args.body_timeout)
    return limits, conn


def _projector_path(args: argparse.Namespace, model_path: Path) -> Path | None:
    """--mmproj, else the projector paired with the model in its folder (none with
    --no-mmproj)."""
    from engine.models import paired_projector

    if args.no_mmproj:
        return None
    return args.mmproj or paired_projector(model_path)


def _with_projector(args: argparse.Namespace, model_path: Path, spec: Any) -> Any:
    """The spec with the model's projector (the plan's placement of it when planned)."""
    if args.no_mmproj:
        return spec.with_changes(mmproj_path=None)
    projector = _projector_path(args, model_path)
    if projector is None:
        return spec
    changes: dict[str, Any] = {"mmproj_path": str(projector)}
    if args.no_mmproj_offload or not spec.mmproj_offload:
        changes["mmproj_offload"] = False
    return spec.with_changes(**changes)


def run(args: argparse.Namespace) -> int:
    from engine.models import resolve_local_model
    from engine.server.runner import ServeOptions, serve

    if args.grammar_checker:
        from engine.server import grammar_probe

        return grammar_probe.main([args.grammar_checker])
    args.llama = serve_llama_flags.normalise(args)
    if args.models is None and not args.library and (args.model_ngl or args.model_kv_type):
        print("loadout serve: --model-ngl and --model-kv-type apply to --models/--library "
              "(one model: --ngl, --kv-type)", file=sys.stderr)
        return 2
    if args.models_dir and not args.library:
        print("loadout serve: --models-dir applies to --library (one folder alone: "
              "--models DIR)", file=sys.stderr)
        return 2
    if args.models is not None or args.library:
        if args.model is not None:
            print("loadout serve: give MODEL or --models/--library, not both",
                  file=sys.stderr)
            return 2
        single = [flag for flag, on in (("--launch-spec", args.launch_spec is not None),
                                        ("--workers", bool(args.workers)),
                                        ("--no-plan", args.no_plan),
                                        ("--mmproj", args.mmproj is not None),
                                        ("--alias", bool(args.alias))) if on]
        if single:
            print(f"loadout serve: {', '.join(single)} apply to one model, not to "
                  "--models/--library", file=sys.stderr)
            return 2
        return _run_router(args)
    args.model = args.model or "demo"
    path = resolve_local_model(args.model)
    aliases = tuple(args.alias) + ((args.model,) if args.model != str(path) else ())
    aliases += (path.name, path.stem)
    # llama-server names the model by its first alias (in sorted order), else the file
    model_id = sorted(args.alias)[0] if args.alias else path.stem
    spec, plan = _spec_and_plan(args, path)
    spec = _with_projector(args, path, spec)
    spec = serve_llama_flags.spec_changes(args.llama, spec)
    if args.no_warmup:
        spec = spec.with_changes(warm_up=False)
    # the key from the environment (how the desktop app passes it), never left there
    key = api_key.api_key_of(args)
    # the desktop app's private key: with it, only the app is served until it says
    app_key = os.environ.pop(APP_KEY_ENV, None) or None
    app_public = os.environ.pop(APP_PUBLIC_ENV, "") == "1"
    limits, conn = _limits(args)
    options = ServeOptions(spec=spec, replan=_replan(args, path, spec, plan),
                           host=args.host, port=args.port,
                           api_key=key, cors_origins=tuple(args.cors),
                           queue_size=args.queue_size, max_body_bytes=args.max_body_bytes,
                           ready_json=args.ready_json, aliases=aliases,
                           model_id=model_id, allowed_hosts=tuple(args.allow_host),
                           limits=limits, connections=conn, app_key=app_key,
                           app_public=app_public, embeddings=args.embeddings,
                           llama=args.llama)
    print(f"loading {path.name} ...", file=sys.stderr, flush=True)
    try:
        return serve(options)
    except OSError as exc:
        print(f"loadout serve: cannot listen on {args.host}:{args.port}: {exc}",
              file=sys.stderr)
        return 1


def _router(args: argparse.Namespace) -> Any:
    import dataclasses

    from engine import run_records
    from engine.rig_file import inventory_for
    from engine.server import model_catalog
    from engine.server.router import Router, RouterOptions
    from engine.server.router_plan import RouterPlanner, model_pins
    from planner.request import Request

    if args.models is not None:
        if not args.models.is_dir():
            raise SystemExit(f"loadout serve: --models {args.models}: not a folder")
        catalog = model_catalog.folder_models(args.models)
    else:
        catalog = model_catalog.library_models(args.models_dir)
    if not catalog:
        raise SystemExit("loadout serve: no GGUF model found to serve")
    pins = {"n_gpu_layers": None if args.ngl is None or args.ngl < 0 else args.ngl,
            "kv_type": args.kv_type.lower() if args.kv_type else None}
    request = Request(context=max(64, args.ctx), parallel=max(1, args.parallel),
                      advise=False, machine_runs=run_records.samples(),
                      **{k: v for k, v in pins.items() if v is not None})
    inventory = inventory_for(args.rig)
    if args.ram_budget is not None:
        host = dataclasses.replace(inventory.host, ram_available_bytes=int(
            args.ram_budget * 1024**3) + request.host_reserve_bytes)
        inventory = dataclasses.replace(inventory, host=host)
    if args.threads:
        inventory = dataclasses.replace(
            inventory, host=dataclasses.replace(inventory.host, cores=args.threads))
    names = {n: m.id for m in catalog for n in m.names()}
    unknown = [k for k in args.keep if k not in names]
    if unknown:
        raise SystemExit(f"loadout serve: --keep {', '.join(unknown)}: not among the "
                         f"models served ({', '.join(m.id for m in catalog)})")
    try:
        per_model = model_pins(args.model_ngl, args.model_kv_type, names)
    except ValueError as exc:
        raise SystemExit(f"loadout serve: {exc}") from None
    paths = {m.id: m.path for m in catalog}
    options = RouterOptions(queue_size=max(1, args.queue_size),
                            pinned=frozenset(names[k] for k in args.keep),
                            idle_timeout_s=args.idle_timeout,
                            models_max=max(1, args.models_max) if args.models_max else None,
                            embeddings=args.embeddings,
                            min_residency_s=max(0.0, args.min_residency),
                            max_swaps=args.max_swaps if args.max_swaps > 0 else None,
                            swap_window_s=max(0.0, args.swap_window))
    planner = RouterPlanner(inventory, request, n_threads=args.threads,
                            warm_up=not args.no_warmup, vision=not args.no_mmproj,
                            mmproj_offload=not args.no_mmproj_offload,
                            embeddings=args.embeddings,
                            pins={paths[k]: v for k, v in per_model.items()})
    return Router(catalog, planner, options)


def _run_router(args: argparse.Namespace) -> int:
    from engine.server.router_runner import serve_router
    from engine.server.runner import ServeOptions
    from planner.errors import PlannerError

    try:
        router = _router(args)
    except PlannerError as exc:
        print(f"loadout serve: {exc}", file=sys.stderr)
        return 1
    key = api_key.api_key_of(args)
    app_key = os.environ.pop(APP_KEY_ENV, None) or None
    app_public = os.environ.pop(APP_PUBLIC_ENV, "") == "1"
    limits, conn = _limits(args)
    first = next(iter(router.models.values())).model.path
    from engine.launch import LaunchSpec

    options = ServeOptions(spec=LaunchSpec(model_path=str(first)), host=args.host,
                           port=args.port, api_key=key, cors_origins=tuple(args.cors),
                           queue_size=args.queue_size, max_body_bytes=args.max_body_bytes,
                           ready_json=args.ready_json, allowed_hosts=tuple(args.allow_host),
                           limits=limits, connections=conn, app_key=app_key,
                           app_public=app_public)
    print(f"serving {len(router.models)} models on demand: {', '.join(router.ids())}",
          file=sys.stderr, flush=True)
    _show_router_log()
    try:
        return serve_router(router, options)
    except OSError as exc:
        print(f"loadout serve: cannot listen on {args.host}:{args.port}: {exc}",
              file=sys.stderr)
        return 1


def _show_router_log() -> None:
    """Loads and unloads (with their reasons) on stderr too, not only in the log file."""
    import logging

    handler = logging.StreamHandler()
    handler.setLevel(logging.INFO)
    handler.addFilter(lambda record: record.levelno < logging.WARNING)  # root shows those
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logging.getLogger("engine.server.router").addHandler(handler)
