"""UI responsiveness of the chat while an answer streams, on the real engine process.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/chat_latency.py [--history 60] [--json]

0. A 5 ms heartbeat timer on the idle UI thread for 2 s: this machine's noise floor now
   (other processes compete for its cores), reported with the load average.
1. The demo model is loaded in its engine process and asked for a long answer (up to
   ``--max-tokens`` tokens) in a new conversation. While the answer streams the heartbeat
   runs: the longest gap between two beats is the longest the UI froze.
2. The same updates (the texts the chat showed) are replayed into a conversation of
   ``--history`` question/answer pairs (long answers with code blocks): each update, which
   re-renders only the arriving answer, is timed; so is a whole-transcript render, for
   comparison. (A real prompt that long would not fit the demo's context.)

Target: no UI stall over 50 ms above the noise floor while tokens stream.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class Heartbeat:
    """A timer on the UI thread recording the gaps between its beats."""

    def __init__(self, interval_ms: int = 5) -> None:
        from PySide6.QtCore import QTimer

        self.gaps: list[float] = []
        self._last = 0.0
        self.timer = QTimer()
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._beat)

    def _beat(self) -> None:
        now = time.perf_counter()
        if self._last:
            self.gaps.append(now - self._last)
        self._last = now

    def start(self) -> None:
        self.gaps, self._last = [], 0.0
        self.timer.start()

    def stop(self) -> dict[str, float]:
        self.timer.stop()
        gaps = sorted(self.gaps) or [0.0]
        return {"max_ms": gaps[-1] * 1000, "p99_ms": gaps[int(len(gaps) * 0.99)] * 1000,
                "beats": len(self.gaps)}


def _wait(condition: Any, timeout_s: float) -> None:
    from PySide6.QtTest import QTest

    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("timed out")
        QTest.qWait(10)


def _fill(store: Any, pairs: int) -> int:
    conv = store.create("history")
    answer = "Here is a paragraph of an answer. " * 30 + "\n\n```python\n" + \
        "value = compute(value)\n" * 15 + "```\n"
    timings = {"ttft_s": 0.1, "prefill_tps": 900.0, "decode_tps": 50.0, "e2e_tps": 40.0,
               "prompt_tokens": 100, "cached_tokens": 0, "generated_tokens": 300}
    for i in range(pairs):
        store.add_message(conv, "user", f"Question number {i}?")
        mid = store.add_message(conv, "assistant", "")
        store.finish_message(mid, answer, timings, "stop")
    return conv


def run(history: int, max_tokens: int) -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["LOADOUT_HOME"] = tempfile.mkdtemp(prefix="loadout-bench-")
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    from app.i18n import LanguageSwitcher
    from app.main import MainWindow
    from app.settings_store import AppSettings
    from engine.demo import demo_model_path
    from engine.launch import LaunchSpec

    beat = Heartbeat()
    beat.start()
    from PySide6.QtTest import QTest

    QTest.qWait(2000)
    idle = beat.stop()
    window = MainWindow(AppSettings(scan_other_apps=False), LanguageSwitcher(), detect=False)
    window.resize(1280, 800)
    window.show()
    window.show_page("chat")
    try:
        demo = demo_model_path()
        window.control.load(demo, LaunchSpec(model_path=str(demo), n_ctx=8192, n_seq_max=1))
        _wait(lambda: window.engine.state in ("ready", "crashed"), 120)
        chat = window.chat
        chat.temperature.setValue(0.8)
        chat.max_tokens.setValue(max_tokens)
        done: list[Any] = []
        shown: list[str] = []
        chat.sig_answer_finished.connect(done.append)
        chat.streamer.sig_text_arrived.connect(shown.append)
        beat.start()
        chat.send("Write a long story about a lighthouse keeper.")
        _wait(lambda: done, 300)
        streaming_beat = beat.stop()
        timings = done[0].timings
        # the same updates replayed into a long conversation: what one update costs
        conv = _fill(chat.store, history)
        chat.reload_conversations()
        chat.open_conversation(conv)
        answer_id = chat.store.add_message(conv, "assistant", "")
        chat.messages = chat.store.messages(conv)
        chat._streaming = (conv, answer_id)
        tail_ms, whole_ms = [], []
        for text in shown:
            t0 = time.perf_counter()
            chat._on_streamer_text(text)
            app.processEvents()
            tail_ms.append((time.perf_counter() - t0) * 1000)
        for text in shown[:: max(1, len(shown) // 10)]:
            t0 = time.perf_counter()
            chat.messages[-1] = type(chat.messages[-1])(answer_id, "assistant", text)
            chat._render()
            app.processEvents()
            whole_ms.append((time.perf_counter() - t0) * 1000)
        chat._streaming = None
    finally:
        window.shutdown()
    del app
    return {
        "load_average": os.getloadavg(),
        "idle_ui": idle,
        "streaming_ui": streaming_beat,
        "history_messages": 2 * history,
        "ui_updates": len(shown),
        "update_render_ms": {"mean": statistics.fmean(tail_ms) if tail_ms else 0.0,
                             "max": max(tail_ms, default=0.0)},
        "whole_transcript_render_ms": {"mean": statistics.fmean(whole_ms) if whole_ms
                                       else 0.0, "max": max(whole_ms, default=0.0)},
        "engine": {k: timings.get(k) for k in ("decode_tps", "generated_tokens", "ttft_s")},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=60,
                        help="question/answer pairs already in the conversation")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.history, args.max_tokens)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"load average {result['load_average'][0]:.1f}")
    print(f"idle UI: longest gap {result['idle_ui']['max_ms']:.1f} ms "
          f"(p99 {result['idle_ui']['p99_ms']:.1f} ms)")
    s = result["streaming_ui"]
    print(f"while streaming {result['engine']['generated_tokens']} tokens at decode "
          f"{result['engine']['decode_tps']:.1f} t/s: longest UI gap {s['max_ms']:.1f} ms "
          f"(p99 {s['p99_ms']:.1f} ms)")
    u = result["update_render_ms"]
    w = result["whole_transcript_render_ms"]
    print(f"{result['ui_updates']} UI updates replayed into a conversation of "
          f"{result['history_messages']} messages: {u['mean']:.1f} ms mean / {u['max']:.1f} "
          f"ms max per update (whole-transcript render: {w['mean']:.1f} ms mean / "
          f"{w['max']:.1f} ms max)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
