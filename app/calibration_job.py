"""Measure this machine from the app: ``loadout calibrate --json`` in a child process.

The same one-minute calibration as the command line (the demo model by default): the
engine runs in its own process, so the app's process never loads it. Each measured run
is recorded in this machine's run records by that process; the next plan reads them.
No Qt here: :func:`measure` runs in a worker job and reports each run through
``progress``.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app import engine_job

DEFAULT_SECONDS = 60.0
_RUN_LINE = re.compile(r"^run (\d+): prefill ([\d.]+) t/s, decode ([\d.]+) t/s")


class MeasureError(RuntimeError):
    """The calibration process failed (its last error line is the message)."""


@dataclass(frozen=True)
class RunProgress:
    """One measured run, as the calibration process reports it."""

    run: int
    prefill_tps: float
    decode_tps: float
    elapsed_s: float


def command(model: str = "demo", extra: Sequence[str] = ()) -> list[str]:
    """The calibration's command line (the app's own interpreter, or a frozen bundle's
    console executable, whose output the app reads); ``extra`` after the default
    ``--seconds``, so it may shorten the run."""
    from engine.engine_select import loadout_command

    return [*loadout_command(), "calibrate", model, "--seconds", f"{DEFAULT_SECONDS:g}",
            "--json", *extra]


def measure(argv: Sequence[str], progress: Callable[[RunProgress], None],
            cancelled: Callable[[], bool]) -> dict[str, Any] | None:
    """Run the calibration ``argv``; returns its ``loadout.calibration/1`` document, or
    None when ``cancelled()`` turned true (the process is then ended)."""
    start = time.monotonic()
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    engine_job.contain(proc.pid)  # Windows: the model it loads ends with the app
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read() if proc.stdout
                                                        else ""), daemon=True)
    reader.start()

    def watch() -> None:  # a cancel (a newer request, the app closing) ends the process
        while proc.poll() is None:
            if cancelled():
                proc.terminate()
                return
            time.sleep(0.1)

    threading.Thread(target=watch, daemon=True).start()
    last = ""
    assert proc.stderr is not None
    for line in proc.stderr:
        line = line.strip()
        if not line:
            continue
        last = line
        match = _RUN_LINE.match(line)
        if match:
            progress(RunProgress(int(match[1]), float(match[2]), float(match[3]),
                                 time.monotonic() - start))
    code = proc.wait()
    reader.join()
    if cancelled():
        return None
    if code != 0:
        raise MeasureError(last or f"loadout calibrate exited with {code}")
    try:
        doc = json.loads("".join(out).strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise MeasureError(f"loadout calibrate printed no result: {exc}") from exc
    if not isinstance(doc, dict):
        raise MeasureError("loadout calibrate printed no result")
    return doc
