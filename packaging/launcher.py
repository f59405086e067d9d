"""Entry point of the frozen Loadout application (the bundle's ``loadout`` executable).

Before anything imports ``llama_cpp`` it picks the engine build for this machine's GPUs
(``engine.engine_select``) and points the demo model at the copy inside the bundle; then
it runs the ordinary ``loadout`` command line. Options it handles itself, before the
command line sees them:

    --engine NAME            run this once with the NAME build (cpu, cuda, hip, vulkan, metal)
    --engine-default NAME    remember NAME for every start (``auto``: choose automatically)
    --engines                list the builds in this bundle, the one chosen and why

The executable also stands in for the interpreter the app starts its children with
(``sys.executable`` is this executable in the bundle): ``-m loadout ARGS`` runs the command
line with ARGS, and ``-m app.engine_child [--lifeline FD] -m loadout ARGS`` ties the
process to the app first, as the engine's wrapper does.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DEMO_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundle_root() -> Path:
    """The folder with the bundle's data files (PyInstaller's ``_internal``)."""
    return Path(getattr(sys, "_MEIPASS", Path(__file__).resolve().parent))


def split_engine_args(argv: list[str]) -> tuple[list[str], str | None, str | None, bool]:
    """Take the launcher's own options out of ``argv``.

    Returns:
        (the rest of ``argv``, ``--engine`` value, ``--engine-default`` value, ``--engines``)
    """
    rest: list[str] = []
    once = default = None
    listing = False
    args = iter(argv)
    for arg in args:
        name, eq, value = arg.partition("=")
        if name in ("--engine", "--engine-default"):
            value = value if eq else next(args, "")
            if not value:
                raise SystemExit(f"loadout: {name} needs a value (cpu, cuda, hip, vulkan, "
                                 "metal or auto)")
            if name == "--engine":
                once = value
            else:
                default = value
        elif arg == "--engines":
            listing = True
        else:
            rest.append(arg)
    return rest, once, default, listing


ENGINE_CHILD = "app.engine_child"


def split_module_args(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """Take ``-m loadout`` (and the engine wrapper's ``-m app.engine_child [--lifeline
    FD]``) off the front of ``argv``, as ``python`` would run those modules.

    Returns:
        (the ``loadout`` command line, the wrapper's own arguments or None without one)

    Raises:
        SystemExit: ``-m`` names another module (this executable runs only Loadout).
    """
    wrapper = None
    if argv[:2] == ["-m", ENGINE_CHILD]:
        rest = argv[2:]
        wrapper = rest[:2] if rest[:1] == ["--lifeline"] else []
        argv = rest[len(wrapper):]
    if argv[:2] == ["-m", "loadout"]:
        return argv[2:], wrapper
    if argv[:1] == ["-m"] or wrapper is not None:
        module = argv[1] if argv[:1] == ["-m"] and len(argv) > 1 else " ".join(argv[:1])
        raise SystemExit(f"loadout: cannot run {module or 'nothing'!r}: this executable runs "
                         f"-m loadout or -m {ENGINE_CHILD} ... -m loadout")
    return argv, None


def _use_bundled_demo_model() -> None:
    model = bundle_root() / "models" / DEMO_FILE
    if model.is_file():
        os.environ.setdefault("LOADOUT_DEMO_MODEL", str(model))


def _print_engines(choice: object) -> None:
    from engine import engine_select as es

    root = es.engines_dir()
    builds = es.discover(root) if root else []
    chosen = getattr(choice, "backend", "")
    if not builds:
        print("this installation has one engine build (no engines folder)")
    for build in builds:
        mark = "*" if build.backend == chosen else " "
        print(f"{mark} {build.backend:7} {build.cmake_args}")
    print(f"chosen: {chosen}: {choice.sentence()}")  # type: ignore[attr-defined]
    for backend, code in getattr(choice, "rejected", ()):
        print(f"  not {backend}: {es.SENTENCES.get(code, code).format(backend=backend)}")


def main(argv: list[str] | None = None) -> int:
    """Choose the engine build, then run the ``loadout`` command line."""
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw[:1] == ["--engine-probe"]:  # a child asked whether one engine build sees a GPU
        from engine import engine_probe

        return engine_probe.main(raw[1:])
    raw, wrapper = split_module_args(raw)
    if wrapper is not None:  # the engine's wrapper: end with the app, however it ends
        from app.engine_child import tie_to_parent

        tie_to_parent(wrapper)
    args, once, default, listing = split_engine_args(raw)
    _use_bundled_demo_model()
    from engine import engine_probe
    from engine import engine_select as es

    if default is not None:
        es.save_preference(default)
        print(f"engine build from the next start: {default}")
        if not args and not listing:
            return 0
    choice = es.select_and_activate(wanted=once, verify=engine_probe.sees_gpu)
    if listing:
        _print_engines(choice)
        return 0
    if "--self-test" in args:
        print(f"engine build chosen: {choice.backend}: {choice.sentence()}", flush=True)
    elif choice.reason == "gpu_unusable":  # a GPU the bundle cannot use: say so
        print(f"loadout: {choice.sentence()}", file=sys.stderr, flush=True)
    from loadout.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    if sys.platform == "win32" or getattr(sys, "frozen", False):
        import multiprocessing

        multiprocessing.freeze_support()
    sys.exit(main())
