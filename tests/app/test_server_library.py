"""The Server page's choice between serving the loaded model and every model of the library:
the real engine restarts as ``loadout serve --library`` (the loaded model kept), the page
lists the library's models, the Chat page still answers, and the choice goes back. The
page's screenshot is saved under ``$LOADOUT_SCREENSHOTS_DIR`` when set (else in a
temporary folder)."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from app.engine_launch import Binding, library_arguments, library_model_id
from app.settings_store import load_settings
from engine.launch import LaunchSpec
from tests.app.engine_window import close_window, open_window, wait_until
from tests.helpers.gguf_factory import Shape, write_llama


def test_the_library_command_line_keeps_the_model_and_the_binding() -> None:
    spec = LaunchSpec("/m/x.gguf", n_ctx=8192, n_seq_max=2, n_threads=3)
    lan = Binding(lan=True, port=8080, api_key="sk-secret", public=True)
    args = library_arguments(spec, "x", lan, 8080)
    assert args == ["-m", "loadout", "serve", "--library", "--keep", "x",
                    "--model-kv-type", "x=f16", "--ctx", "4096",
                    "--parallel", "2", "--threads", "3", "--host", "0.0.0.0",
                    "--port", "8080", "--ready-json"]
    assert "sk-secret" not in " ".join(args)  # the key goes through the environment
    bare = library_arguments(spec, None, Binding(), 5000)
    assert "--keep" not in bare and "--model-kv-type" not in bare


def test_the_model_folders_of_settings_go_to_the_library_engine(tmp_path: Path) -> None:
    from app.settings_store import AppSettings, save_settings

    mine = tmp_path / "my models"
    save_settings(AppSettings(model_folders=(str(mine),)))
    args = library_arguments(LaunchSpec("/m/x.gguf"), "x", Binding(), 5000)
    at = args.index("--models-dir")
    assert args[at + 1] == str(mine) and args.count("--models-dir") == 1
    mine.mkdir()
    write_llama(mine / "added.gguf", Shape(n_vocab=2048))
    assert library_model_id(mine / "added.gguf") == "added"  # as the engine names it
    assert library_model_id(mine / "added.gguf", folders=()) is None


def test_the_kept_model_keeps_the_plan_pages_gpu_layers_and_kv_type() -> None:
    spec = LaunchSpec("/m/x.gguf", n_ctx=4096, n_gpu_layers=12, type_k="q8_0",
                      type_v="q8_0")
    args = library_arguments(spec, "x", Binding(), 5000)
    assert args[4:10] == ["--keep", "x", "--model-ngl", "x=12", "--model-kv-type", "x=q8_0"]
    # K and V of different types: no one KV type to pin (the router plans it)
    mixed = library_arguments(LaunchSpec("/m/x.gguf", type_k="q8_0", type_v="f16"), "x",
                              Binding(), 5000)
    assert "--model-kv-type" not in mixed and "--model-ngl" not in mixed


def test_the_model_kept_is_named_by_its_library_id_and_one_elsewhere_is_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _library_of(tmp_path, monkeypatch)
    elsewhere = tmp_path / "elsewhere" / "other.gguf"
    elsewhere.parent.mkdir()
    write_llama(elsewhere, Shape(n_vocab=2048))
    assert library_model_id(tmp_path / "home" / "models" / "mine.gguf") == "mine"
    assert library_model_id(elsewhere) is None  # served alone (EngineProcess.load)


def test_the_saved_choice_is_shown_and_followed_at_start(make_window: Any) -> None:
    from app.settings_store import AppSettings

    window = make_window(settings=AppSettings(scan_other_apps=False, serve_library=True))
    assert window.server.library() and window.engine.library
    assert window.server.serve_choice.currentText() == "every model in the library"
    assert window.server.serve_choice.accessibleName() == "Which models to serve"


def _library_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A LOADOUT_HOME whose library holds the demo and mine.gguf only."""
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    write_llama(home / "models" / "mine.gguf", Shape(n_vocab=2048))
    for name, value in (("HOME", tmp_path), ("USERPROFILE", tmp_path),
                        ("HF_HUB_CACHE", tmp_path / "hf"),
                        ("OLLAMA_MODELS", tmp_path / "ollama"), ("LOADOUT_HOME", home)):
        monkeypatch.setenv(name, str(value))
    return home


def _rows(window: Any) -> dict[str, list[str]]:
    table = window.server.models
    return {table.item(r, 0).text(): [table.item(r, c).text() for c in range(1, 4)]
            for r in range(table.rowCount()) if table.item(r, 0) is not None}


def _requests_of(window: Any, model: str) -> float:
    endpoint = window.engine.endpoint
    request = urllib.request.Request(endpoint.url + "/metrics", headers={
        "Authorization": f"Bearer {endpoint.api_key}"})
    with urllib.request.urlopen(request, timeout=30) as resp:
        text = resp.read().decode()
    found = re.search(rf'^loadout_model_requests_total{{model="{re.escape(model)}"}} (\S+)$',
                      text, re.M)
    return float(found.group(1)) if found else 0.0


@pytest.mark.slow
def test_serving_the_library_and_back(qapp: QApplication, tmp_path: Path, demo_model: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    window = open_window(_library_of(tmp_path, monkeypatch), demo_model)
    try:
        single = window.engine.pid()
        assert window.engine.endpoint.model and not window.server.models_box.isVisibleTo(
            window.server)
        window.show_page("server")
        window.server.serve_choice.setCurrentIndex(1)  # every model in the library
        assert load_settings().serve_library is True
        wait_until(lambda: window.engine.state == "ready" and window.engine.pid() != single,
                   what="the library engine")
        cmdline = Path(f"/proc/{window.engine.pid()}/cmdline").read_bytes().split(b"\0")
        assert b"--library" in cmdline and b"--keep" in cmdline
        pinned = window.engine.pinned
        assert pinned and window.engine.endpoint.model == pinned
        assert cmdline[cmdline.index(b"--keep") + 1].decode() == pinned

        wait_until(lambda: {pinned, "mine"} <= set(_rows(window)), 30, "the models listed")
        wait_until(lambda: _rows(window)[pinned][0] == "loaded", 30, "the kept model")
        rows = _rows(window)
        assert set(rows) == {pinned, "mine"}
        assert rows["mine"][:2] == ["on disk", "—"]
        assert rows[pinned][1].endswith("MiB")  # its planned memory
        assert window.server.models_box.isVisibleTo(window.server)
        page = window.server  # the slots of the loaded model and the machine's memory
        wait_until(lambda: page.requests.rowCount() > 0 and page.memory.rowCount() > 0, 30,
                   "the slots and the memory")
        assert {page.requests.item(r, 0).text() for r in range(page.requests.rowCount())
                } == {f"#0 {pinned}", f"#1 {pinned}"}  # --parallel 2
        assert page.memory.item(0, 2).text().endswith("GiB")
        assert page.planned_label.text().startswith("Planned for the loaded models: RAM ")
        # docs/screenshots/server-library.png with LOADOUT_SCREENSHOTS_DIR=docs/screenshots
        shots = Path(os.environ.get("LOADOUT_SCREENSHOTS_DIR", tmp_path))
        assert window.grab().save(str(shots / "server-library.png"))

        chat = window.chat
        window.show_page("chat")
        chat.new_conversation()
        chat.max_tokens.setValue(16)
        results: list[Any] = []
        chat.sig_answer_finished.connect(results.append)
        chat.input.setPlainText("What is the capital of France?")
        chat.send_button.click()
        wait_until(lambda: results, 120, "the answer")
        assert chat.last_error == "" and results[0].text.strip()
        assert _requests_of(window, pinned) == 1  # the router sent it to the kept model

        library = window.engine.pid()
        window.server.serve_choice.setCurrentIndex(0)  # this model
        assert load_settings().serve_library is False
        wait_until(lambda: window.engine.state == "ready" and window.engine.pid() != library,
                   what="the single-model engine")
        cmdline = Path(f"/proc/{window.engine.pid()}/cmdline").read_bytes().split(b"\0")
        assert b"--library" not in cmdline and b"--launch-spec" in cmdline
        assert window.engine.pinned is None
        wait_until(lambda: not window.server.models_box.isVisibleTo(window.server), 30,
                   "the list gone")
    finally:
        close_window(window)


def _models_doc(window: Any) -> dict[str, Any]:
    endpoint = window.engine.endpoint
    request = urllib.request.Request(endpoint.url + "/v1/models", headers={
        "Authorization": f"Bearer {endpoint.api_key}"})
    with urllib.request.urlopen(request, timeout=30) as resp:
        return {m["id"]: m for m in json.loads(resp.read())["data"]}


@pytest.mark.slow
def test_the_kept_model_is_served_with_the_plan_pages_kv_type_and_gpu_layers(
        qapp: QApplication, tmp_path: Path, demo_model: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from app.pages.plan_page import CONTEXT_STEPS
    from engine.hardware import detect
    from engine.server.router_plan import RouterPlanner, need_of
    from planner.request import Request

    window = open_window(_library_of(tmp_path, monkeypatch), demo_model, load=False)
    try:
        window.show_page("server")
        window.server.serve_choice.setCurrentIndex(1)  # every model in the library
        window.show_page("plan")
        plan = window.plan
        plan.context.setValue(CONTEXT_STEPS.index(4096) + 1)
        plan.parallel.setValue(2)
        plan.kv.setCurrentIndex(plan.kv.findData("q8_0"))
        window.select_model(demo_model)
        wait_until(lambda: plan.last_plan is not None and not window.runner.busy("plan")
                   and window.state.model_path == demo_model, 60, "the plan")
        plan.load_button.click()
        wait_until(lambda: window.engine.state in ("ready", "crashed"), what="the engine")
        assert window.engine.state == "ready", window.engine.log_text()
        spec, pinned = window.engine.spec, window.engine.pinned
        assert pinned and str(spec.type_k) == "q8_0"
        # the command line the page built: the kept model with the Plan page's choices
        cmdline = [a.decode() for a in
                   Path(f"/proc/{window.engine.pid()}/cmdline").read_bytes().split(b"\0")]
        assert "--library" in cmdline and "--keep" in cmdline
        assert cmdline[cmdline.index("--model-kv-type") + 1] == f"{pinned}=q8_0"
        assert cmdline[cmdline.index("--model-ngl") + 1] == f"{pinned}={spec.n_gpu_layers}"
        # and the router planned (and loaded) it so: its planned memory is a q8_0 plan's
        wait_until(lambda: _rows(window).get(pinned, [""])[0] == "loaded", 60,
                   "the kept model")
        planned = _models_doc(window)[pinned]["planned_bytes"]

        def expected(kv: str) -> dict[str, int]:
            request = Request(context=4096, parallel=2, advise=False, kv_type=kv,
                              n_gpu_layers=spec.n_gpu_layers)
            return need_of(RouterPlanner(detect(measure=False), request).alone(demo_model))

        assert planned == expected("q8_0") != expected("f16")
    finally:
        close_window(window)
