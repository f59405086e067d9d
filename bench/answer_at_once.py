"""Does the planner CLI answer at once? Wall time of real ``loadout`` processes.

1. Malformed model files (a 4-byte file, truncated and hostile headers): ``loadout plan
   FILE`` on this machine must refuse each, with an error, in under 1 s (the file is
   read before the machine is looked at).
2. The first detection on a fresh profile (nothing measured yet): ``loadout detect
   --json`` under 10 s, with the machine kept busy.
3. Warm ``loadout detect`` and ``loadout plan demo`` (figures cached) under 1.5 s each,
   with the machine kept busy: the figures the first detection took while busy are kept,
   not measured again by each command.

The load is bounded: one spinning process per CPU thread, each of which stops by itself
after ``--load-s`` seconds (and is killed when the bench ends). Before the first
detection the bench waits (at most ``--settle-s``) until the load average reaches the
level at which detection calls the machine busy (0.75 x threads).

Run: ``nice -n 10 .venv/bin/python bench/answer_at_once.py [--runs N] [--root DIR]``
(``--no-load`` on a machine that is busy already). Each line gives the wall time against
the target and the CPU time of the same processes: where other work oversubscribes the
cores, the wall time is mostly theirs and the CPU time is the command's own cost.
``--root`` runs another checkout's code (e.g. ``git archive`` of an older commit) with
this interpreter, to compare before and after in one sitting.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MALFORMED_TARGET_S = 1.0
FRESH_TARGET_S = 10.0
WARM_TARGET_S = 1.5
SPIN = "import time, sys\nend = time.monotonic() + float(sys.argv[1])\n" \
       "while time.monotonic() < end:\n    pass\n"


def malformed_files(folder: Path, demo: Path) -> list[Path]:
    """Twenty files that are not readable models, each named after what is wrong."""
    with open(demo, "rb") as f:
        head = f.read(4 << 20)
    magic3 = b"GGUF" + struct.pack("<I", 3)
    cases: dict[str, bytes] = {
        "four-bytes": b"GGUF",
        "empty": b"",
        "text": b"this is not a model, it is a note\n" * 10,
        "magic-and-version-only": magic3,
        "version-99": b"GGUF" + struct.pack("<IQQ", 99, 0, 0),
        "big-endian": b"GGUF" + struct.pack(">IQQ", 3, 0, 0),
        "tensor-count-2^63": magic3 + struct.pack("<QQ", 2**63 - 1, 0),
        "kv-count-2^63": magic3 + struct.pack("<QQ", 0, 2**63 - 1),
        "string-of-1.9GB": magic3 + struct.pack("<QQ", 0, 1) + struct.pack("<Q", 12)
        + b"general.name" + struct.pack("<IQ", 8, 1_900_000_000),
        "array-of-2^60": magic3 + struct.pack("<QQ", 0, 1) + struct.pack("<Q", 9)
        + b"general.x" + struct.pack("<IIQ", 9, 4, 2**60),
        "value-type-99": magic3 + struct.pack("<QQ", 0, 1) + struct.pack("<Q", 9)
        + b"general.x" + struct.pack("<I", 99),
        "random-after-magic": magic3 + os.urandom(4000),
        "zeros-after-magic": magic3 + bytes(4000),
    }
    for cut in (24, 100, 1_000, 10_000, 100_000, 1_000_000, len(head) // 2):
        cases[f"demo-cut-at-{cut}"] = head[:cut]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in cases.items():
        path = folder / f"{name}.gguf"
        path.write_bytes(data)
        paths.append(path)
    return paths


def _env(home: Path, root: Path) -> dict[str, str]:
    return {**os.environ, "LOADOUT_HOME": str(home), "PYTHONPATH": str(root),
            "HF_HUB_OFFLINE": "1"}


CPU_SECONDS: list[float] = []  # user + system seconds of each process timed (and its children)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(home: Path, root: Path, *argv: str) -> tuple[float, int, str]:
    """Wall seconds, exit status and stderr's last line of one ``loadout`` process (its
    CPU seconds, children included, go to :data:`CPU_SECONDS`)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "loadout", *argv], cwd=root,
                          env=_env(home, root), capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - start
    CPU_SECONDS.append(_children_cpu() - cpu)
    tail = (done.stderr.strip().splitlines() or [""])[-1]
    return seconds, done.returncode, tail


@contextmanager
def busy_machine(seconds: float, settle_s: float, spin: bool = True) -> Iterator[float]:
    """Keep every CPU thread busy for at most ``seconds``; yields the load average once
    it reached the busy level (or ``settle_s`` passed). ``spin=False`` adds no load."""
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN, str(seconds)])
                for _ in range(threads if spin else 0)]
    try:
        deadline = time.monotonic() + settle_s
        while os.getloadavg()[0] < 0.75 * threads and time.monotonic() < deadline:
            time.sleep(1.0)
        yield os.getloadavg()[0]
    finally:
        for proc in spinners:
            proc.kill()
        for proc in spinners:
            proc.wait()


def _summary(name: str, values: list[float], target: float) -> str:
    """Wall times against the target, and the CPU seconds of the same runs (the last
    ``len(values)`` in :data:`CPU_SECONDS`): on a machine shared beyond its cores the
    wall time is mostly the other processes' and the CPU time is the command's cost."""
    worst = max(values)
    cpu = CPU_SECONDS[-len(values):]
    verdict = "ok" if worst < target else "OVER TARGET"
    return (f"{name}: wall median {statistics.median(values):.2f} s, worst {worst:.2f} s "
            f"over {len(values)} runs (target < {target:g} s: {verdict}); CPU median "
            f"{statistics.median(cpu):.2f} s, worst {max(cpu):.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="warm runs of each command")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to run")
    parser.add_argument("--malformed", type=int, default=20,
                        help="how many of the 20 malformed files to try (an older checkout "
                             "detects the machine before refusing each: slow)")
    parser.add_argument("--load-s", type=float, default=240.0,
                        help="the load stops by itself after this many seconds")
    parser.add_argument("--no-load", action="store_true",
                        help="start no load: the machine is busy already (a shared one)")
    parser.add_argument("--settle-s", type=float, default=60.0,
                        help="wait at most this long for the load average to rise")
    args = parser.parse_args()
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    from engine.demo import demo_model_path

    threads = len(os.sched_getaffinity(0))
    print(f"code: {root}; {threads} CPU threads; load average before: "
          f"{os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="loadout-answer-") as tmp:
        base = Path(tmp)
        home = base / "home"
        refused: list[float] = []
        for path in malformed_files(base / "bad", demo_model_path())[:args.malformed]:
            # a fresh profile each time: nothing measured, so detection (if it ran first)
            # would measure
            seconds, code, tail = timed(base / f"home-{path.stem}", root, "plan", str(path))
            refused.append(seconds)
            mark = "refused" if code != 0 else "ACCEPTED"
            print(f"  {path.name:<32} {seconds:5.2f} s  {mark} (exit {code}): {tail[:90]}")
        print(_summary("malformed plan refused", refused, MALFORMED_TARGET_S))
        with busy_machine(args.load_s, args.settle_s, spin=not args.no_load) as load:
            print(f"busy: {0 if args.no_load else threads} spinning processes, load "
                  f"average {load:.1f} "
                  f"(detection calls >= {0.75 * threads:.1f} busy)")
            fresh, code, tail = timed(home, root, "detect", "--json")
            assert code == 0, tail
            print(_summary("first detect on a fresh profile", [fresh], FRESH_TARGET_S))
            probes = home / "cache" / "hardware-probes.json"
            if probes.exists():
                import json

                doc = json.loads(probes.read_text())
                print(f"  cached: RAM busy={doc.get('host', {}).get('busy')}, CPU core "
                      f"busy={doc.get('cpu', {}).get('busy')}")
            warm_detect = [timed(home, root, "detect")[0] for _ in range(args.runs)]
            print(_summary("warm detect (busy)", warm_detect, WARM_TARGET_S))
            warm_plan = [timed(home, root, "plan", "demo")[0] for _ in range(args.runs)]
            print(_summary("warm plan demo (busy)", warm_plan, WARM_TARGET_S))
            print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
