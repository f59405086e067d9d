"""Chat: conversations on the left, the transcript with its speed footers, the input.

Answers stream from the engine process over HTTP in a worker (:mod:`app.chat_streamer`);
the page only renders what arrives. While an answer streams, a small chart follows that
answer's decode t/s as the engine reports it for its slot (``/v1/loadout/status``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.accessible import set_name
from app.chat_images import ImageFile, question_content
from app.chat_render import footer_text, speed_figures
from app.chat_store import DEFAULT_SAMPLING, ChatStore, Message
from app.chat_streamer import ChatStreamer
from app.engine_client import Endpoint, StreamResult
from app.engine_process import EngineProcess
from app.widgets.image_attach import AttachStrip, QuestionInput
from app.widgets.speed_chart import SpeedChart
from app.widgets.transcript import TranscriptView

log = logging.getLogger(__name__)

LIVE_POLL_MS = 250
IDLE_POLL_MS = 1000
TITLE_CHARS = 48


def answer_decode_tps(status: dict[str, Any], request_id: str | None) -> float | None:
    """The decode t/s the engine reports for the answer ``request_id`` (its slot's, from
    the answer's own timer); None until it has one."""
    if request_id is None:
        return None
    engine = status.get("engine") or {}
    for slot in engine.get("slots") or ():
        if isinstance(slot, dict) and slot.get("request_id") == request_id:
            value = slot.get("decode_tps")
            return float(value) if isinstance(value, int | float) else None
    return None


def _escaped(text: str) -> str:
    """``text`` as literal Markdown (a file name's ``_`` or ``*`` stays as it is)."""
    return "".join(f"\\{c}" if c in "\\`*_[]<>#" else c for c in text)


class ChatPage(QWidget):
    """The chat window.

    A question asked before the engine is ready waits (saved, shown with a note) and is
    sent as soon as the engine is; when no load is on its way, asking starts one.

    Signals:
        sig_answer_speed_changed(float): the decode t/s of the answer streaming (the
            engine's live figure), then its final one.
        sig_answer_finished(object): the :class:`StreamResult` of an answer.
        sig_load_wanted(): a question waits and no engine is loading: load one.
    """

    sig_answer_speed_changed = Signal(float)
    sig_answer_finished = Signal(object)
    sig_load_wanted = Signal()

    def __init__(self, engine: EngineProcess, store: ChatStore | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self.store = store or ChatStore(wait_for_disk=False)  # the UI never waits on a disk
        self.streamer = ChatStreamer(self)
        self.conversation_id: int | None = None
        self.messages: list[Message] = []
        self.last_error = ""
        self._loading_conversation = False
        self._closed = False
        self._streaming: tuple[int, int] | None = None  # (conversation, message) answered
        self._waiting: int | None = None  # the conversation whose question waits
        self.load_expected = False  # a load is on its way (the plan is being made)
        self.refusal = ""  # why the last load asked for was not started ("": none)
        self.send_note = ""  # why the last question was not sent ("": it was)
        self._build()
        self.streamer.sig_text_arrived.connect(self._on_streamer_text)
        self.streamer.sig_answer_finished.connect(self._on_streamer_finished)
        engine.sig_state_changed.connect(self._on_engine_state)
        engine.poller.sig_status_received.connect(self._on_engine_status)
        self.reload_conversations()
        if self.conversation_id is None:
            self.open_conversation(None)
        self.retranslate()

    # -- layout -----------------------------------------------------------------------
    def _build(self) -> None:
        self.title = QLabel()
        self.title.setObjectName("pageTitle")
        self.engine_label = QLabel()  # a sentence, with the model's name: may be long
        self.engine_label.setWordWrap(True)
        self.engine_label.setAlignment(Qt.AlignmentFlag.AlignRight
                                       | Qt.AlignmentFlag.AlignVCenter)
        self.list_label = QLabel()
        self.conversation_list = QListWidget()
        self.conversation_list.setHorizontalScrollBarPolicy(
            Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.conversation_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.conversation_list.currentItemChanged.connect(self._on_list_current)
        self.new_button, self.delete_button = QPushButton(), QPushButton()
        self.new_button.clicked.connect(self.new_conversation)
        self.delete_button.clicked.connect(self.delete_conversation)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addWidget(self.list_label)
        left_layout.addWidget(self.conversation_list, 1)
        row = QHBoxLayout()
        row.addWidget(self.new_button)
        row.addWidget(self.delete_button)
        left_layout.addLayout(row)

        self.settings_box = QGroupBox()
        self.settings_box.setCheckable(True)
        self.settings_box.setChecked(False)
        self.system_prompt = QPlainTextEdit()
        self.system_prompt.setMaximumHeight(self.fontMetrics().lineSpacing() * 4)
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.1)
        self.top_p = QDoubleSpinBox()
        self.top_p.setRange(0.0, 1.0)
        self.top_p.setSingleStep(0.05)
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 1 << 20)
        self._show_sampling(DEFAULT_SAMPLING)
        self.settings_body = QWidget()
        form = QFormLayout(self.settings_body)
        form.setContentsMargins(0, 0, 0, 0)
        box_layout = QVBoxLayout(self.settings_box)
        box_layout.addWidget(self.settings_body)
        self.form_labels = [QLabel() for _ in range(4)]
        for label, field in zip(self.form_labels, (self.system_prompt, self.temperature,
                                                   self.top_p, self.max_tokens), strict=True):
            form.addRow(label, field)
        self.settings_box.toggled.connect(self._on_settings_toggled)
        self._on_settings_toggled(False)
        self.system_prompt.textChanged.connect(self._save_settings)
        for box in (self.temperature, self.top_p, self.max_tokens):
            box.valueChanged.connect(self._save_settings)

        self.transcript = TranscriptView()
        self.chart = SpeedChart()
        self.footer = QLabel()
        self.footer.setObjectName("chatFooter")
        self.footer.setWordWrap(True)
        live = QHBoxLayout()
        live.addWidget(self.footer, 3)
        live.addWidget(self.chart, 2)
        self.input = QuestionInput()
        self.attachments = AttachStrip()
        self.input.sig_images_received.connect(self.attachments.add)
        self.transcript.image_source = self._image_bytes
        self.input.setMaximumHeight(self.fontMetrics().lineSpacing() * 5)
        self.send_button, self.stop_button = QPushButton(), QPushButton()
        self.regenerate_button, self.edit_button = QPushButton(), QPushButton()
        self.send_button.clicked.connect(lambda: self.send())
        shortcut = QShortcut(QKeySequence("Ctrl+Return"), self.input)
        shortcut.activated.connect(lambda: self.send())
        self.stop_button.clicked.connect(self.stop)
        self.regenerate_button.clicked.connect(self.regenerate)
        self.edit_button.clicked.connect(self.edit_last_question)
        buttons = QHBoxLayout()
        buttons.addWidget(self.edit_button)
        buttons.addWidget(self.regenerate_button)
        buttons.addStretch(1)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.send_button)

        right = QWidget()
        right_layout = QVBoxLayout(right)
        header = QHBoxLayout()
        header.addWidget(self.title)
        header.addWidget(self.engine_label, 1)
        right_layout.addLayout(header)
        right_layout.addWidget(self.settings_box)
        right_layout.addWidget(self.transcript, 1)
        right_layout.addLayout(live)
        right_layout.addWidget(self.attachments)
        right_layout.addWidget(self.input)
        right_layout.addLayout(buttons)
        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([220, 800])
        QVBoxLayout(self).addWidget(splitter)

    # -- conversations ----------------------------------------------------------------
    def reload_conversations(self) -> None:
        """List the saved conversations (the current one stays selected)."""
        if self._closed:
            return
        self.conversation_list.blockSignals(True)
        self.conversation_list.clear()
        for conv in self.store.conversations():
            item = QListWidgetItem(conv.title or self.tr("New conversation"))
            item.setData(Qt.ItemDataRole.UserRole, conv.id)
            self.conversation_list.addItem(item)
            if conv.id == self.conversation_id:
                self.conversation_list.setCurrentItem(item)
        self.conversation_list.blockSignals(False)
        if self.conversation_id is None and self.conversation_list.count():
            self.conversation_list.setCurrentRow(0)

    def open_conversation(self, conversation_id: int | None) -> None:
        """Show a conversation (None: an empty page for a new one)."""
        if self._closed:
            return
        if self.streamer.busy:
            self.streamer.stop()
        self.conversation_id = conversation_id
        conv = self.store.conversation(conversation_id) if conversation_id else None
        sampling = {**DEFAULT_SAMPLING, **(conv.sampling if conv else {})}
        self._loading_conversation = True
        self.system_prompt.setPlainText(conv.system_prompt if conv else "")
        self._show_sampling(sampling)
        self._loading_conversation = False
        self._refresh_settings_title()
        self.messages = self.store.messages(conversation_id) if conversation_id else []
        self.last_error = ""
        self.send_note = ""
        last = next((m for m in reversed(self.messages) if m.role == "assistant"), None)
        self._show_footer(last.timings if last else {})
        self._render()
        self._refresh_buttons()

    def new_conversation(self) -> None:
        """Start a new, empty conversation."""
        self.conversation_list.blockSignals(True)
        self.conversation_list.setCurrentRow(-1)
        self.conversation_list.blockSignals(False)
        self.open_conversation(None)
        self.input.setFocus()

    def delete_conversation(self) -> None:
        """Delete the conversation shown."""
        if self.conversation_id is None:
            return
        self.store.delete(self.conversation_id)
        self.conversation_id = None
        self.reload_conversations()
        if self.conversation_id is None:
            self.open_conversation(None)

    def _on_list_current(self, item: QListWidgetItem | None,
                         _previous: QListWidgetItem | None) -> None:
        if item is not None:
            self.open_conversation(int(item.data(Qt.ItemDataRole.UserRole)))

    def _show_sampling(self, sampling: dict[str, Any]) -> None:
        self.temperature.setValue(float(sampling["temperature"]))
        self.top_p.setValue(float(sampling["top_p"]))
        self.max_tokens.setValue(int(sampling["max_tokens"]))

    def sampling(self) -> dict[str, Any]:
        """The sampling settings shown (saved with the conversation)."""
        return {"temperature": round(self.temperature.value(), 3),
                "top_p": round(self.top_p.value(), 3), "max_tokens": self.max_tokens.value()}

    def _save_settings(self) -> None:
        self._refresh_settings_title()
        if self._loading_conversation or self.conversation_id is None:
            return
        self.store.update(self.conversation_id, system_prompt=self.system_prompt.toPlainText(),
                          sampling=self.sampling())

    def _refresh_settings_title(self) -> None:
        self.settings_box.setTitle(self.tr(
            "System prompt and sampling: temperature {temperature}, top-p {top_p}, "
            "longest answer {max_tokens} tokens").format(
                temperature=f"{self.temperature.value():.2g}",
                top_p=f"{self.top_p.value():.2g}", max_tokens=self.max_tokens.value()))

    def _on_settings_toggled(self, shown: bool) -> None:
        self.settings_body.setVisible(shown)
        self.settings_box.setFlat(not shown)
        # collapsed: only its title line (the style would draw an empty frame under it)
        self.settings_box.setMaximumHeight(16777215 if shown else
                                           max(self.fontMetrics().height(), 16) + 2)
        margin = 9 if shown else 0
        layout = self.settings_box.layout()
        if layout is not None:
            layout.setContentsMargins(margin, margin, margin, margin)

    # -- asking -----------------------------------------------------------------------
    def send(self, text: str | None = None) -> bool:
        """Ask ``text`` (default: the input box); False when nothing could be sent.

        Before the engine is ready the question is saved and waits for it.
        """
        question = (self.input.toPlainText() if text is None else text).strip()
        if (not question and not self.attachments.images) or self.streamer.busy \
                or self._waiting is not None:
            return False
        self.send_note = self._image_refusal()
        if self.send_note:  # the question and its pictures stay where they are
            self._render()
            return False
        if self.conversation_id is None:
            title = " ".join(question.split())[:TITLE_CHARS] or self.tr("An image")
            self.conversation_id = self.store.create(
                title, self.system_prompt.toPlainText(), self.sampling())
            self.reload_conversations()
        question_id = self.store.add_message(self.conversation_id, "user", question)
        for image in self.attachments.take():
            self.store.add_image(question_id, image.mime, image.data)
        self.input.clear()
        endpoint = self._engine.endpoint if self._engine.state == "ready" else None
        if endpoint is not None:
            self._ask(endpoint)
            return True
        self._waiting = self.conversation_id
        self.messages = self.store.messages(self.conversation_id)
        self.last_error = ""
        self._render()
        self._refresh_buttons()
        if self._engine.state != "loading" and not self.load_expected:
            self.sig_load_wanted.emit()
        return True

    def _image_refusal(self) -> str:
        """Why the pictures attached cannot go with the question ("" when they can): the
        model loaded reads no images (it has no vision projector)."""
        spec = self._engine.spec
        if not self.attachments.images or self._engine.state != "ready" or spec is None \
                or spec.mmproj_path:
            return ""
        from engine.models import paired_projector

        if paired_projector(Path(spec.model_path)) is not None:  # the engine loads it
            return ""
        return self.tr("{model} does not read images, so the question was not sent. Remove "
                       "the pictures to ask it, or load a model that reads images (the "
                       "Models page marks them).").format(model=Path(spec.model_path).name)

    @property
    def waiting(self) -> bool:
        """Whether a question waits for the engine."""
        return self._waiting is not None

    def set_load_expected(self, expected: bool) -> None:
        """Say that a load is (or no longer is) on its way before the engine starts."""
        self.load_expected = expected
        if expected:
            self.refusal = ""
        self._refresh_engine_label()

    def set_load_refused(self, message: str) -> None:
        """Say that the load asked for was not started, and why (``message``); a question
        waiting stays, for the next model that loads."""
        self.load_expected = False
        self.refusal = message
        self._refresh_engine_label()
        self._render()
        self._refresh_buttons()

    def _ask_waiting(self) -> None:
        waiting, self._waiting = self._waiting, None
        endpoint = self._engine.endpoint
        if waiting is None or endpoint is None or self._closed:
            return
        if waiting != self.conversation_id:
            self.open_conversation(waiting)
        self._ask(endpoint)

    def _ask(self, endpoint: Endpoint) -> None:
        assert self.conversation_id is not None
        history = [{"role": m.role, "content": self._content(m)}
                   for m in self.store.messages(self.conversation_id)]
        system = self.system_prompt.toPlainText().strip()
        if system:
            history.insert(0, {"role": "system", "content": system})
        answer_id = self.store.add_message(self.conversation_id, "assistant", "")
        self.messages = self.store.messages(self.conversation_id)
        self.last_error = ""
        self.chart.clear()
        self._engine.poller.set_interval(LIVE_POLL_MS)
        body = {"messages": history, **self.sampling()}
        self._streaming = (self.conversation_id, answer_id)
        self.streamer.start(endpoint, body, self.store.path, answer_id)
        self._render()
        self._refresh_buttons()

    def _content(self, message: Message) -> Any:
        """A message as the API takes it: with its images as content parts."""
        images = [ImageFile(*found) for found in map(self.store.image, message.images)
                  if found is not None]
        return question_content(message.content, images)

    def _image_bytes(self, attachment_id: int) -> bytes | None:
        found = self.store.image(attachment_id)
        return found[1] if found else None

    def stop(self) -> None:
        """Stop the answer streaming (what arrived is kept), or stop a question waiting."""
        if self._waiting is not None:
            self._waiting = None
            self._render()
            self._refresh_buttons()
        self.streamer.stop()

    def regenerate(self) -> None:
        """Ask the last question again (the last answer is replaced)."""
        endpoint = self._engine.endpoint if self._engine.state == "ready" else None
        if self.conversation_id is None or endpoint is None or self.streamer.busy:
            return
        messages = self.store.messages(self.conversation_id)
        if messages and messages[-1].role == "assistant":
            self.store.delete_from(self.conversation_id, messages[-1].id)
        if any(m.role == "user" for m in messages):
            self._ask(endpoint)

    def edit_last_question(self) -> None:
        """Put the last question back in the input box (it and its answer are removed)."""
        if self.conversation_id is None or self.streamer.busy or self._waiting is not None:
            return
        messages = self.store.messages(self.conversation_id)
        last = next((m for m in reversed(messages) if m.role == "user"), None)
        if last is None:
            return
        self.store.delete_from(self.conversation_id, last.id)
        self.input.setPlainText(last.content)
        self.open_conversation(self.conversation_id)
        self.input.setFocus()

    # -- streaming --------------------------------------------------------------------
    def _on_streamer_text(self, text: str) -> None:
        # the user may have switched to another conversation meanwhile
        streaming = self._streaming
        if streaming and self.messages and self.messages[-1].id == streaming[1]:
            last = self.messages[-1]
            self.messages[-1] = Message(last.id, last.role, text)
            self._render_streaming()

    def _on_streamer_finished(self, result: StreamResult, error: str) -> None:
        self._engine.poller.set_interval(IDLE_POLL_MS)
        streaming, self._streaming = self._streaming, None
        shown = streaming is not None and streaming[0] == self.conversation_id
        self.last_error = error if shown else ""
        if self.conversation_id is not None and not self._closed:
            self.messages = self.store.messages(self.conversation_id)
        if shown:
            self._show_footer(result.timings)
        final = result.timings.get("decode_tps")
        if isinstance(final, int | float):
            if shown:  # the chart ends on the answer's final figure, the footer's
                self.chart.add(float(final))
            self.sig_answer_speed_changed.emit(float(final))
        self._render()
        self._refresh_buttons()
        self.sig_answer_finished.emit(result)

    def _show_footer(self, timings: dict[str, Any]) -> None:
        """The figures of the conversation's last answer, labelled as that answer's."""
        figures = footer_text(timings)
        self.footer.setText(self.tr("Last answer: {figures}").format(figures=figures)
                            if figures else "")

    def _on_engine_status(self, status: dict[str, Any]) -> None:
        if not self.streamer.busy:
            return
        tps = answer_decode_tps(status, self.streamer.request_id)
        if tps is not None:
            self.chart.add(tps)
            self.sig_answer_speed_changed.emit(tps)

    def _on_engine_state(self, state: str) -> None:
        if state in ("loading", "ready", "crashed"):
            self.load_expected = False
        if state in ("loading", "ready"):
            self.refusal = ""
        self._refresh_engine_label()
        if state == "ready" and self._waiting is not None and not self.streamer.busy:
            self._ask_waiting()
            return
        if self._waiting is not None:
            self._render()
        self._refresh_buttons()

    def _render(self) -> None:
        note = ""
        if self._waiting is not None and self._waiting == self.conversation_id:
            note = self.tr("Your question waits for the model to load; it is answered as "
                           "soon as the model is ready.")
            if self._engine.state == "crashed":
                note = self.tr("Your question waits: the engine stopped (see the message "
                               "above). Load a model to have it answered.")
            if self.refusal:
                note = self.tr("Your question waits, but no model is loading. {why} It is "
                               "answered as soon as a model is loaded; Stop withdraws it."
                               ).format(why=_escaped(self.refusal))
        elif self.refusal:
            note = _escaped(self.refusal)
        elif self.send_note:
            note = _escaped(self.send_note)
        self.transcript.show_messages(self.messages, self.last_error, note)

    def _render_streaming(self) -> None:
        self.transcript.show_streaming(self.messages)

    @property
    def code_blocks(self) -> tuple[str, ...]:
        """The code blocks of the transcript (what its copy links copy)."""
        return self.transcript.code_blocks

    def transcript_text(self) -> str:
        """The transcript as plain text (what the user reads)."""
        return self.transcript.toPlainText()

    def _refresh_buttons(self) -> None:
        ready = self._engine.state == "ready"
        busy = self.streamer.busy
        has_messages = bool(self.messages)
        self.send_button.setEnabled(not busy and self._waiting is None)
        self.stop_button.setEnabled(busy or self._waiting is not None)
        self.regenerate_button.setEnabled(ready and not busy and has_messages)
        self.edit_button.setEnabled(not busy and has_messages and self._waiting is None)
        self.delete_button.setEnabled(self.conversation_id is not None and not busy)

    def _refresh_engine_label(self) -> None:
        if self.load_expected and self._engine.state in ("unloaded", "crashed"):
            self.engine_label.setText(self.tr("Preparing the model…"))
            return
        if self.refusal and self._engine.state in ("unloaded", "crashed"):
            self.engine_label.setText(self.tr("Not loaded: the reason is below"))
            return
        names = {"unloaded": self.tr("No model loaded: ask a question to load the last "
                                     "one, or load one from the Plan page."),
                 "loading": self.tr("The model is loading…"),
                 "ready": self.tr("Ready: {model} answers").format(model=self._model_name()),
                 "stopping": self.tr("Unloading…"),
                 "crashed": self.tr("The engine stopped (see the message above).")}
        self.engine_label.setText(names.get(self._engine.state, ""))

    def _model_name(self) -> str:
        """The file name of the model the engine runs ("" when none)."""
        spec = self._engine.spec
        return Path(spec.model_path).name if spec is not None else ""

    def shutdown(self) -> None:
        """Stop streaming and wait for the worker; close the database."""
        self.streamer.shutdown()
        self._closed = True
        self.store.close()

    # -- texts ------------------------------------------------------------------------
    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.title.setText(self.tr("Chat"))
        self.list_label.setText(self.tr("Conversations"))
        self.new_button.setText(self.tr("New"))
        self.delete_button.setText(self.tr("Delete"))
        self._refresh_settings_title()
        for label, text in zip(self.form_labels, (
                self.tr("System prompt"), self.tr("Temperature"), self.tr("Top-p"),
                self.tr("Longest answer (tokens)")), strict=True):
            label.setText(text)
        self.input.setPlaceholderText(self.tr("Ask something… (Ctrl+Enter sends)"))
        set_name(self.input, self.tr("Question"))
        set_name(self.transcript, self.tr("Conversation"))
        set_name(self.conversation_list, self.tr("Conversations"))
        set_name(self.chart, self.tr("Live decode speed of this answer"))
        self.send_button.setText(self.tr("Send"))
        self.stop_button.setText(self.tr("Stop"))
        self.regenerate_button.setText(self.tr("Regenerate"))
        self.edit_button.setText(self.tr("Edit last question"))
        self.chart.set_caption(self.tr("decode t/s, this answer"))
        self.chart.setToolTip(self.tr(
            "This answer's decode t/s while it streams, as the engine measures it (other "
            "requests to the server are not counted)"))
        self._refresh_engine_label()
        self.reload_conversations()
        if self.messages:
            self._render()
        last = next((m for m in reversed(self.messages) if m.role == "assistant"), None)
        self._show_footer(last.timings if last else {})
        self._refresh_buttons()


__all__ = ["ChatPage", "answer_decode_tps", "speed_figures"]
