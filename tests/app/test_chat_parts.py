"""The chat's parts without an engine: storage, rendering, SSE reading, launch rules."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication

from app.chat_render import footer_text, guard_text, render
from app.chat_store import ChatStore, Message
from app.engine_client import sse_data
from app.engine_launch import Binding, KeyRequiredError, needs_restart, safer_spec
from app.server_snippets import snippets
from engine.launch import LaunchSpec

TIMINGS = {"ttft_s": 0.25, "prefill_tps": 812.0, "decode_tps": 47.8, "e2e_tps": 20.6,
           "prompt_tokens": 40, "cached_tokens": 12, "generated_tokens": 9}


def test_every_change_is_on_disk_at_once(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats.sqlite3")
    conv = store.create("Question", "Be brief.", {"temperature": 0.2})
    store.add_message(conv, "user", "Hi")
    answer = store.add_message(conv, "assistant", "")
    store.set_content(answer, "Hello, wor")
    # another connection (a restarted app) sees it without the first one closing
    raw = sqlite3.connect(tmp_path / "chats.sqlite3")
    assert raw.execute("SELECT content FROM messages WHERE id = ?",
                       (answer,)).fetchone() == ("Hello, wor",)
    raw.close()
    store.finish_message(answer, "Hello, world", TIMINGS, "stop")
    again = ChatStore(tmp_path / "chats.sqlite3")
    messages = again.messages(conv)
    assert [(m.role, m.content) for m in messages] == [("user", "Hi"),
                                                       ("assistant", "Hello, world")]
    assert messages[1].timings == TIMINGS and messages[1].finish_reason == "stop"
    header = again.conversation(conv)
    assert header is not None and header.system_prompt == "Be brief."
    assert header.sampling == {"temperature": 0.2}
    again.delete_from(conv, messages[1].id)
    assert [m.role for m in again.messages(conv)] == ["user"]
    again.delete(conv)
    assert again.conversations() == [] and store.messages(conv) == []
    store.close()
    again.close()


def test_footer_names_each_speed_as_the_design_does() -> None:
    footer = footer_text(TIMINGS)
    assert footer.startswith("TTFT 250 ms · prefill 812 t/s · decode 47.8 t/s · "
                             "end-to-end 20.6 t/s")
    assert "40 prompt tokens (12 cached), 9 generated" in footer
    assert "acceptance" not in footer
    spec = footer_text({**TIMINGS, "acceptance": 0.75, "tokens_per_step": 2.5})
    assert "acceptance 75% (2.50 tokens per step)" in spec
    assert "decode — t/s" in footer_text({**TIMINGS, "decode_tps": None})
    assert footer_text({}) == ""


def test_loop_guard_intervention_is_shown_under_the_answer() -> None:
    stopped = {**TIMINGS, "loop_guard": "stopped"}
    assert "stopped" in guard_text(stopped)
    assert "retried" in guard_text({"loop_guard": "retried"})
    assert guard_text(TIMINGS) == ""
    text = render([Message(1, "user", "Go"),
                   Message(2, "assistant", "la la la", stopped, "stop")]).markdown
    assert "loop guard stopped this answer" in text


def test_each_closed_code_block_gets_a_copy_link(qapp: Any) -> None:
    answer = ("Here:\n\n```python\nprint('hi')\nx = 1\n```\n\nand\n\n~~~\nls -l\n~~~\n\n"
              "```\nnot closed yet")
    rendered = render([Message(1, "user", "code?"), Message(2, "assistant", answer)])
    assert rendered.code_blocks == ("print('hi')\nx = 1", "ls -l")
    assert "(copy:0)" in rendered.markdown and "(copy:1)" in rendered.markdown
    assert "(copy:2)" not in rendered.markdown


def test_the_copy_link_puts_the_block_on_the_clipboard(make_window: Any) -> None:
    window = make_window()
    chat = window.chat
    conv = chat.store.create("code")
    chat.store.add_message(conv, "user", "code?")
    chat.store.add_message(conv, "assistant", "```sh\necho hello\n```")
    chat.reload_conversations()
    chat.open_conversation(conv)
    assert chat.code_blocks == ("echo hello",)
    chat.transcript.follow_link(QUrl("copy:0"))
    assert QGuiApplication.clipboard().text() == "echo hello"
    assert "echo hello" in chat.transcript_text()
    assert chat.send_button.isEnabled()  # no engine loaded: asking loads one


def test_sse_events_are_read_across_lines_and_blank_separators() -> None:
    stream = [b'data: {"a": 1}\n', b"\n", b": comment\n", b"data: [DONE]\r\n", b"\r\n",
              b"data: tail"]
    assert list(sse_data(iter(stream))) == ['{"a": 1}', "[DONE]", "tail"]


def test_other_devices_are_never_served_without_a_key() -> None:
    with pytest.raises(KeyRequiredError):
        Binding(lan=True)
    with pytest.raises(KeyRequiredError):
        Binding(lan=True, api_key="")
    assert Binding(lan=True, api_key="k").host == "0.0.0.0"
    assert Binding().host == "127.0.0.1"


def test_restart_only_when_the_address_or_key_changes() -> None:
    loop = Binding()
    assert not needs_restart(loop, Binding(port=0), running_port=43210)
    assert not needs_restart(loop, Binding(port=43210), running_port=43210)
    assert needs_restart(loop, Binding(port=8080), running_port=43210)
    assert needs_restart(loop, Binding(lan=True, api_key="k"), running_port=43210)
    lan = Binding(lan=True, api_key="k")
    assert needs_restart(lan, Binding(lan=True, api_key="other"), running_port=1)
    assert needs_restart(lan, Binding(), running_port=1)


def test_a_safer_spec_keeps_more_memory_free_each_time() -> None:
    spec = LaunchSpec(model_path="m.gguf", n_gpu_layers=-1, n_batch=2048, n_ubatch=512)
    once = safer_spec(spec, n_layers=40)
    assert once.n_gpu_layers == 30 and once.n_batch == 1024 and once.n_ubatch == 256
    twice = safer_spec(once, n_layers=40)
    assert twice.n_gpu_layers < once.n_gpu_layers and twice.n_ubatch == 128
    assert safer_spec(LaunchSpec(model_path="m", n_gpu_layers=1), 40).n_gpu_layers == 0
    assert safer_spec(LaunchSpec(model_path="m", n_gpu_layers=0), 40).n_gpu_layers == 0
    assert once.n_ctx == spec.n_ctx  # the context asked for is kept


def test_snippets_carry_the_real_url_key_and_model() -> None:
    docs = snippets("http://127.0.0.1:8081/v1", "sk-loadout-abc", "demo-model")
    for text in docs.values():
        assert "http://127.0.0.1:8081/v1" in text and "demo-model" in text
        assert "sk-loadout-abc" in text
    assert "Authorization" not in snippets("http://h/v1", None, "m")["curl"]
    compile(docs["Python"], "<snippet>", "exec")  # valid Python


def test_a_streaming_answer_re_renders_only_itself_and_reads_as_the_whole(
        make_window: Any) -> None:
    chat = make_window().chat
    history = [Message(1, "user", "code?"),
               Message(2, "assistant", "```\nfirst\n```", TIMINGS, "stop"),
               Message(3, "user", "more?")]
    chat.messages = [*history, Message(4, "assistant", "Sure:\n\n```sh\necho")]
    chat._render_streaming()
    chat.messages[-1] = Message(4, "assistant", "Sure:\n\n```sh\necho hi\n```\n\nDone.")
    chat._render_streaming()
    streamed, blocks = chat.transcript_text(), chat.code_blocks
    chat._render()
    assert chat.transcript_text() == streamed
    assert blocks == chat.code_blocks == ("first", "echo hi")


def test_an_answer_that_looks_like_html_shows_as_text_with_its_figures(
        make_window: Any) -> None:
    # a line starting like HTML (PHP, a declaration, a comment) once opened an HTML block
    # that hid the rest of the answer and its figures
    chat = make_window().chat
    answer = "Here:\n<?php echo 1;\n<!doctype x\n<!-- not closed\nEnd."
    chat.messages = [Message(1, "user", "php?"), Message(2, "assistant", answer, TIMINGS,
                                                         "stop")]
    for show in (chat._render, chat._render_streaming):
        show()
        text = chat.transcript_text()
        assert "<?php echo 1;" in text and "<!-- not closed" in text and "End." in text
        assert "end-to-end" in text


def test_a_plan_that_does_not_fit_cannot_be_loaded(make_window: Any, sparse_70b: Path,
                                                   qtbot: Any) -> None:
    from planner.inventory import Inventory
    from tests.app.conftest import rig_doc

    doc = rig_doc([])
    doc["host"].update(ram_total_bytes=4 << 30, ram_available_bytes=3 << 30)
    doc["disks"] = []
    window = make_window(Inventory.from_json(doc))  # 4 GiB of RAM: a 70B cannot run
    with qtbot.waitSignal(window.plan.sig_plan_shown, timeout=30000):
        window.select_model(sparse_70b)
    assert window.plan.last_plan.to_json()["fits"] is False
    assert not window.plan.load_button.isEnabled()
    assert "does not fit" in window.plan.load_button.toolTip()
