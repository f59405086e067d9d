"""``loadout chat MODEL``: a terminal chat, streaming, with the speed line after each answer."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("chat", help="terminal chat with a model, streaming, with speeds")
    p.add_argument("model", nargs="?", default="demo",
                   help="a .gguf path, 'demo' (default) or hf:OWNER/REPO/FILE.gguf")
    p.add_argument("--ctx", type=int, default=4096, help="context per chat (tokens)")
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--system", default=None, help="system prompt")
    p.add_argument("-p", "--prompt", default=None,
                   help="ask this one question, print the answer and exit")


def run(args: argparse.Namespace) -> int:
    from engine.models import resolve_local_model
    from engine.quickchat import QuickChat

    path = resolve_local_model(args.model)
    print(f"loading {path.name} ...", file=sys.stderr, flush=True)
    chat = QuickChat(path, n_ctx=args.ctx, system=args.system)
    questions = [args.prompt] if args.prompt else None
    interactive = questions is None
    if interactive:
        print("Type a message and press Enter; an empty line or Ctrl-D quits.", file=sys.stderr)
    while True:
        if questions is not None:
            if not questions:
                return 0
            text = questions.pop(0)
        else:
            try:
                text = input("you> ")
            except EOFError:
                print(file=sys.stderr)
                return 0
            if not text.strip():
                return 0
        for piece in chat.ask(text, max_tokens=args.max_tokens, temperature=args.temperature):
            sys.stdout.write(piece)
            sys.stdout.flush()
        sys.stdout.write("\n")
        print(chat.last_speed_line(), file=sys.stderr, flush=True)
