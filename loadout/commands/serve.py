"""``loadout serve MODEL``: the engine process, an OpenAI-compatible HTTP server."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from engine.server.security import API_KEY_ENV, APP_KEY_ENV, APP_PUBLIC_ENV


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="serve a model over an OpenAI-compatible HTTP API")
    p.add_argument("model", nargs="?", default="demo",
                   help="a .gguf path or 'demo' (default)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; any other needs a key)")
    p.add_argument("--port", type=int, default=8080, help="port (0: any free port)")
    p.add_argument("--parallel", type=int, default=4,
                   help="sequences decoded together (slots)")
    p.add_argument("--ctx", type=int, default=4096, help="context of each sequence (tokens)")
    p.add_argument("--api-key", default=None,
                   help="key clients must send (generated and shown once when --host is "
                        "not loopback and none is given); the environment variable "
                        f"{API_KEY_ENV} gives it without showing it to other users in the "
                        "process list")
    p.add_argument("--cors", action="append", default=[], metavar="ORIGIN",
                   help="allow this browser origin (repeatable; CORS is off by default)")
    p.add_argument("--queue-size", type=int, default=64,
                   help="requests that may wait for a slot before 503")
    p.add_argument("--max-body-bytes", type=int, default=8 * 1024 * 1024)
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="another name clients may reach the server by (the Host header; "
                        "repeatable; '*' turns the check off)")
    p.add_argument("--max-connections", type=int, default=128,
                   help="connections served at once (past it: 503)")
    p.add_argument("--header-timeout", type=float, default=10.0, metavar="S",
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
    p.add_argument("--alias", action="append", default=[],
                   help="another name accepted as the request's model (repeatable)")
    p.add_argument("--embeddings", action="store_true",
                   help="also serve /v1/embeddings with a chat model (mean of its last "
                        "layer's hidden states); an embedding model always serves them")
    p.add_argument("--ready-json", action="store_true",
                   help="print the ready line (URL, generated key) as one JSON document")
    # the server's own grammar checker child (engine.server.grammar_probe), started this way
    # so that a frozen bundle, which has no "python -m", can start it too
    p.add_argument("--grammar-checker", default=None, metavar="MODEL",
                   help=argparse.SUPPRESS)


def _planned(args: argparse.Namespace, model_path: Path, failed: Any = ()) -> Any:
    from engine.launch import plan_launch
    from loadout.commands.plan import worker_list

    pins = {"n_gpu_layers": None if args.ngl is None or args.ngl < 0 else args.ngl,
            "kv_type": args.kv_type.lower() if args.kv_type else None}
    return plan_launch(str(model_path), context=max(64, args.ctx),
                       parallel=max(1, args.parallel), n_threads=args.threads, overrides=pins,
                       workers=worker_list(args.workers), attempt=failed.host_attempt
                       if failed else 0,
                       failed_gpu_plans=tuple(failed.failed_gpu_plans) if failed else ())


def _replan(args: argparse.Namespace, model_path: Path, first: Any) -> Any:
    """The serve ladder: after an out-of-memory load, a re-plan with less on the GPU that
    ran out (or a larger host reserve); None when there is no plan to re-make."""
    from engine.launch import ReplanLadder

    if first is None:
        return None
    ladder = ReplanLadder()
    ladder.last_plan = first

    def replan(exc: Exception) -> Any:
        print(ladder.failed(exc), file=sys.stderr, flush=True)
        launch = _planned(args, model_path, ladder)
        if launch.plan is None:
            return None
        ladder.last_plan = launch.plan
        spec = launch.spec
        return spec.with_changes(warm_up=False) if args.no_warmup else spec

    return replan


def _spec_and_plan(args: argparse.Namespace, model_path: Path) -> tuple[Any, Any]:
    from engine.launch import LaunchSpec

    if args.launch_spec is not None:
        doc = json.loads(args.launch_spec.read_text(encoding="utf-8"))
        doc["model_path"] = str(model_path)
        return LaunchSpec.from_json(doc), None
    parallel = max(1, args.parallel)
    if not args.no_plan:
        launch = _planned(args, model_path)
        if launch.note:
            print(launch.note, file=sys.stderr, flush=True)
        if launch.plan is not None:
            return launch.spec, launch.plan
    changes: dict[str, Any] = {"n_ctx": max(64, args.ctx) * parallel, "n_seq_max": parallel}
    if args.threads:
        changes["n_threads"] = args.threads
    if args.ngl is not None:
        changes["n_gpu_layers"] = args.ngl
    if args.kv_type:
        changes["type_k"] = changes["type_v"] = args.kv_type.lower()
    return LaunchSpec(model_path=str(model_path), **changes), None


def _limits(args: argparse.Namespace) -> tuple[Any, Any]:
    import dataclasses

    from engine.server.connections import ConnectionLimits
    from engine.server.grammar_budget import DEFAULT_LIMITS
    from engine.server.request_model import DEFAULT_REQUEST_LIMITS

    grammar = dataclasses.replace(DEFAULT_LIMITS, max_grammar_bytes=args.max_grammar_bytes,
                                  max_schema_bound=args.max_schema_bound)
    limits = dataclasses.replace(DEFAULT_REQUEST_LIMITS, max_stop_sequences=args.max_stop,
                                 max_stop_chars=args.max_stop_chars, grammar=grammar)
    if args.max_tokens is not None:
        limits = dataclasses.replace(limits, max_tokens=max(1, args.max_tokens))
    conn = ConnectionLimits(max_connections=max(1, args.max_connections),
                            header_timeout_s=args.header_timeout,
                            body_timeout_s=args.body_timeout)
    return limits, conn


def run(args: argparse.Namespace) -> int:
    from engine.models import resolve_local_model
    from engine.server.runner import ServeOptions, serve

    if args.grammar_checker:
        from engine.server import grammar_probe

        return grammar_probe.main([args.grammar_checker])
    path = resolve_local_model(args.model)
    aliases = tuple(args.alias) + ((args.model,) if args.model != str(path) else ())
    aliases += (path.name, path.stem)
    spec, plan = _spec_and_plan(args, path)
    if args.no_warmup:
        spec = spec.with_changes(warm_up=False)
    # the key from the environment (how the desktop app passes it), never left there
    api_key = args.api_key or os.environ.pop(API_KEY_ENV, None) or None
    # the desktop app's private key: with it, only the app is served until it says
    app_key = os.environ.pop(APP_KEY_ENV, None) or None
    app_public = os.environ.pop(APP_PUBLIC_ENV, "") == "1"
    limits, conn = _limits(args)
    options = ServeOptions(spec=spec, replan=_replan(args, path, plan),
                           host=args.host, port=args.port,
                           api_key=api_key, cors_origins=tuple(args.cors),
                           queue_size=args.queue_size, max_body_bytes=args.max_body_bytes,
                           ready_json=args.ready_json, aliases=aliases,
                           model_id=path.stem, allowed_hosts=tuple(args.allow_host),
                           limits=limits, connections=conn, app_key=app_key,
                           app_public=app_public, embeddings=args.embeddings)
    print(f"loading {path.name} ...", file=sys.stderr, flush=True)
    try:
        return serve(options)
    except OSError as exc:
        print(f"loadout serve: cannot listen on {args.host}:{args.port}: {exc}",
              file=sys.stderr)
        return 1
