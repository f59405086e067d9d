"""The wizard's download step: planned first (sizes, free disk), then downloaded off the
UI thread with progress (bytes, speed, time left), Pause / Resume / Cancel.

Pause stops the transfer and keeps the partial file, so Resume (also after a restart)
continues where it stopped; Cancel removes the partial file. Each file is checked
against the hub's sha256 before it is used.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.formatting import fmt_bytes
from app.theme import is_dark, segment_color
from app.wizard_jobs import (
    AnyEvent,
    DownloadOutcome,
    DownloadStage,
    Problem,
    discard_download,
    plan_model_download,
    run_download,
)
from app.workers import Job, WorkerRunner

if TYPE_CHECKING:
    from engine.hub.downloads import DownloadPlan

log = logging.getLogger(__name__)

LANE = "wizard-download"
BAR_STEPS = 1000
# Stages of the step; "busy" ones allow no other action until their job reports back.
STAGES = ("idle", "checking", "ready", "downloading", "pausing", "paused", "cancelling",
          "complete", "failed")
BUSY_STAGES = ("checking", "downloading", "pausing", "cancelling")


class DownloadStep(QWidget):
    """Downloads the choice made on the previous step; ``stage`` says where it stands."""

    sig_download_progressed = Signal(object)  # engine.hub.downloads.Progress
    sig_download_finished = Signal(object)    # Path of the model file
    sig_stage_changed = Signal(str)

    def __init__(self, runner: WorkerRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        self.stage = "idle"
        self.spec = ""
        self.title_text = ""
        self.plan: DownloadPlan | None = None
        self.path: Path | None = None
        self.last_progress: Any = None
        self._problem: DownloadOutcome | None = None
        self._note = ""                            # "cancelled" after a discard
        self.unverified = False                    # complete, but the hub gave no sha256
        self._pause = threading.Event()
        self._discard_after = False
        self._build()
        self.retranslate()

    def _build(self) -> None:
        self.heading = QLabel()
        font = self.heading.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        font.setBold(True)
        self.heading.setFont(font)
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setRange(0, BAR_STEPS)
        self.bar.setMinimumHeight(self.fontMetrics().height() + 10)
        self.stats = QLabel()
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.RichText)
        self.start_button = QPushButton()
        self.start_button.clicked.connect(self.start)
        self.pause_button = QPushButton()
        self.pause_button.clicked.connect(self.pause)
        self.resume_button = QPushButton()
        self.resume_button.clicked.connect(self.start)
        self.cancel_button = QPushButton()
        self.cancel_button.clicked.connect(self.cancel)
        self.retry_button = QPushButton()
        self.retry_button.clicked.connect(self.check)
        buttons = QHBoxLayout()
        for button in (self.start_button, self.pause_button, self.resume_button,
                       self.cancel_button, self.retry_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        # off by default: a file the hub gives no sha256 for is refused
        self.allow_unverified_box = QCheckBox()
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.info)
        layout.addSpacing(8)
        layout.addWidget(self.bar)
        layout.addWidget(self.stats)
        layout.addLayout(buttons)
        layout.addWidget(self.allow_unverified_box)
        layout.addSpacing(8)
        layout.addWidget(self.message)
        layout.addStretch(1)

    # -- actions ----------------------------------------------------------------------
    def set_choice(self, spec: str, title: str, here: Path | None = None) -> None:
        """Download ``spec`` (``hf:OWNER/REPO/FILE.gguf``) next; ``here``: already on disk.

        The same choice again is planned again (the disk may have filled up meanwhile),
        unless it is downloading or done.
        """
        if self.stage in BUSY_STAGES or (spec == self.spec and self.stage == "complete"):
            return
        self.spec, self.title_text = spec, title
        self.plan, self.path, self.last_progress, self._problem = None, None, None, None
        self._note = ""
        if here is not None:
            self._complete(here)
        else:
            self.check()

    def check(self) -> None:
        """Plan the download again: what is here already, and whether the disk has room."""
        spec = self.spec

        def job(_job: Job) -> DownloadOutcome:
            return plan_model_download(spec)

        self._problem = None
        self._set_stage("checking")
        self._runner.submit(LANE, job, self._on_checked, on_failed=self._on_job_failed)

    def start(self) -> None:
        """Download (or resume) in a worker thread; progress arrives on the UI thread."""
        if self.stage not in ("ready", "paused"):
            return
        spec, pause = self.spec, threading.Event()
        self._pause, self._discard_after, self._note = pause, False, ""
        allow = self.allow_unverified_box.isChecked()

        def job(j: Job) -> DownloadOutcome:
            return run_download(spec, AnyEvent(pause, j.cancel_event), j.progress, allow)

        self._set_stage("downloading")
        self._runner.submit(LANE, job, self._on_downloaded, on_progress=self._on_progress,
                            on_failed=self._on_job_failed)

    def pause(self) -> None:
        """Stop the transfer; the partial file stays for Resume."""
        if self.stage == "downloading":
            self._pause.set()
            self._set_stage("pausing")

    def cancel(self) -> None:
        """Stop for good and remove the partial file."""
        if self.stage in ("downloading", "pausing"):
            self._discard_after = True
            self._pause.set()
            self._set_stage("cancelling")
        elif self.stage in ("paused", "ready", "failed") and self.plan is not None:
            self._discard()

    def _discard(self) -> None:
        plan = self.plan
        if plan is None:
            return

        def job(_job: Job) -> DownloadOutcome:
            return discard_download(plan)

        self._set_stage("cancelling")
        self._runner.submit(LANE, job, self._on_discarded, on_failed=self._on_job_failed)

    # -- results ----------------------------------------------------------------------
    def _on_checked(self, outcome: DownloadOutcome) -> None:
        self.plan = plan = outcome.plan
        if outcome.stage is DownloadStage.COMPLETE and outcome.path is not None:
            self._complete(outcome.path)
        elif outcome.stage is DownloadStage.PLANNED and plan is not None:
            kept = plan.total_bytes - plan.remaining_bytes
            self._set_stage("paused" if kept > 0 else "ready")
        else:
            self._problem = outcome
            self._set_stage("failed")

    def _on_progress(self, value: object) -> None:
        self.last_progress = value
        self.sig_download_progressed.emit(value)
        self._refresh()

    def _on_downloaded(self, outcome: DownloadOutcome) -> None:
        self.plan = outcome.plan or self.plan
        if self._discard_after and self.plan is not None:
            self._discard()
        elif outcome.stage is DownloadStage.COMPLETE and outcome.path is not None:
            self._complete(outcome.path)
        elif outcome.stage is DownloadStage.PAUSED:
            self._set_stage("paused")
        else:
            self._problem = outcome
            self._set_stage("failed")

    def _on_discarded(self, _outcome: DownloadOutcome) -> None:
        self.last_progress = None
        self.check()
        self._note = "cancelled"
        self._refresh()

    def _on_job_failed(self, error: BaseException) -> None:
        # Already reported by the app's error handler; the step offers to try again.
        self._problem = DownloadOutcome(DownloadStage.FAILED, problem=Problem.HUB,
                                        detail=str(error))
        self._set_stage("failed")

    def _complete(self, path: Path) -> None:
        self.path = path
        self.unverified = _unverified(self.plan, path)
        self._set_stage("complete")
        self.sig_download_finished.emit(path)

    def _set_stage(self, stage: str) -> None:
        assert stage in STAGES, stage
        self.stage = stage
        self._refresh()
        self.sig_stage_changed.emit(stage)

    # -- display ----------------------------------------------------------------------
    def _figures(self) -> tuple[int, int, float | None]:
        """(bytes here, bytes in all, bytes per second or None when not downloading)."""
        p = self.last_progress
        if p is not None and self.stage in ("downloading", "pausing", "cancelling"):
            return int(p.done_bytes), int(p.total_bytes), float(p.bytes_per_s)
        if self.plan is not None:
            total = int(self.plan.total_bytes)
            return total - int(self.plan.remaining_bytes), total, None
        if p is not None:
            return int(p.done_bytes), int(p.total_bytes), None
        return 0, 0, None

    def _refresh(self) -> None:
        stage = self.stage
        done, total, rate = self._figures()
        if stage == "complete":
            done = total = max(total, 1)
        self.bar.setValue(round(BAR_STEPS * done / total) if total else 0)
        self.bar.setEnabled(stage not in ("idle", "failed"))
        text = self.tr("{done} of {total}").format(done=fmt_bytes(done),
                                                   total=fmt_bytes(total)) if total else ""
        if rate is not None and stage == "downloading":
            text += " · " + self.tr("{speed}/s").format(speed=fmt_bytes(int(rate)))
            if rate > 0:
                text += " · " + self.tr("about {eta} left").format(
                    eta=self.eta_text((total - done) / rate))
        self.stats.setText(text)
        has_partial = done > 0 and stage != "complete"
        self.start_button.setVisible(stage == "ready")
        self.resume_button.setVisible(stage == "paused")
        self.pause_button.setVisible(stage in ("downloading", "pausing"))
        self.pause_button.setEnabled(stage == "downloading")
        self.cancel_button.setVisible(stage in ("downloading", "pausing", "cancelling")
                                      or (stage in ("paused", "failed") and has_partial))
        self.cancel_button.setEnabled(stage in ("downloading", "pausing", "paused", "failed"))
        self.retry_button.setVisible(stage == "failed")
        self.retry_button.setText(self.tr("Check again") if self._problem is not None
                                  and self._problem.problem is Problem.NO_ROOM
                                  else self.tr("Try again"))
        self.heading.setText(self.title_text)
        self.info.setText(self._info_text())
        self.message.setText(self._message_text(done, total))

    def _info_text(self) -> str:
        plan = self.plan
        if plan is None:
            return ""
        return self.tr("{size} into {folder} ({free} free on that disk). Every file is "
                       "checked against the hub's sha256.").format(
            size=fmt_bytes(plan.total_bytes), folder=plan.items[0].target.parent,
            free=fmt_bytes(plan.free_bytes))

    def _message_text(self, done: int, total: int) -> str:
        stage = self.stage
        texts = {
            "checking": self.tr("Checking the hub and the free disk space…"),
            "ready": self.tr("Ready to download."),
            "downloading": self.tr("Downloading… Pause (or closing this window) keeps what "
                                   "has arrived; Cancel removes it."),
            "pausing": self.tr("Pausing…"),
            "paused": self.tr("Paused at {done} of {total}. What was downloaded is kept: "
                              "Resume continues from there, also after a restart.").format(
                done=fmt_bytes(done), total=fmt_bytes(total)),
            "cancelling": self.tr("Cancelling and removing the partial download…"),
            "complete": self.tr("Downloaded and verified."),
        }
        if self.unverified:
            texts["complete"] = self.tr("Downloaded, but not verified: the hub gave no "
                                        "sha256 to check the file against.")
        if stage == "failed" and self._problem is not None:
            color = segment_color("over", is_dark()).name()
            return f'<span style="color: {color}">{self.problem_text(self._problem)}</span>'
        text = texts.get(stage, "")
        if self._note == "cancelled" and stage in ("checking", "ready"):
            text = self.tr("Cancelled: the partial download was removed.") + " " + text
        return text

    def problem_text(self, outcome: DownloadOutcome) -> str:
        """Why the download cannot go on, and what to do."""
        plan = outcome.plan
        if outcome.problem is Problem.NO_ROOM and plan is not None:
            from engine.hub.downloads import DISK_MARGIN

            return self.tr(
                "<b>Not enough free disk space.</b> This download needs {need} (and {margin} "
                "kept free) but only {free} is free in {folder}. Free some space, then press "
                "Check again.").format(
                need=fmt_bytes(plan.remaining_bytes), margin=fmt_bytes(DISK_MARGIN),
                free=fmt_bytes(plan.free_bytes), folder=plan.items[0].partial.parent)
        texts = {
            Problem.OFFLINE: self.tr("<b>The model hub cannot be reached.</b> Check the "
                                     "internet connection, then press Try again. What was "
                                     "downloaded so far is kept."),
            Problem.NOT_FOUND: self.tr("<b>The hub no longer has this file.</b> Go back and "
                                       "pick another model."),
            Problem.CORRUPT: self.tr("<b>The file did not match the hub's sha256</b> and was "
                                     "removed. Press Try again to download it again."),
            Problem.UNVERIFIED: self.tr("<b>The hub gives no checksum (sha256) for this "
                                        "file</b>, so the download cannot be checked: a "
                                        "corrupt or substituted file would go unnoticed. "
                                        "Nothing was downloaded. To take that risk, tick "
                                        "the box below and press Try again."),
            Problem.BUSY: self.tr("<b>This file is being downloaded elsewhere</b> (another "
                                  "Loadout window or command). Wait for it, then press Try "
                                  "again."),
        }
        return texts.get(outcome.problem or Problem.HUB, self.tr(
            "<b>The download failed:</b> {detail}. Press Try again.").format(
            detail=outcome.detail))

    def eta_text(self, seconds: float) -> str:
        """A time left, rounded as people say it."""
        if seconds < 60:
            return self.tr("{n} s").format(n=max(1, round(seconds)))
        if seconds < 3600:
            return self.tr("{n} min").format(n=round(seconds / 60))
        return self.tr("{h} h {m} min").format(h=int(seconds // 3600),
                                               m=round(seconds % 3600 / 60))

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.start_button.setText(self.tr("Download"))
        self.pause_button.setText(self.tr("Pause"))
        self.resume_button.setText(self.tr("Resume"))
        self.cancel_button.setText(self.tr("Cancel download"))
        self.cancel_button.setToolTip(self.tr("Stop and remove what was downloaded."))
        self.allow_unverified_box.setText(self.tr(
            "Download even if the hub gives no checksum (risky: the file cannot be "
            "checked, and a corrupt or substituted file would go unnoticed)"))
        self._refresh()


def _unverified(plan: DownloadPlan | None, path: Path) -> bool:
    """Whether any file of a finished download was kept without a sha256 from the hub to
    check it by (recorded by the downloader)."""
    from engine.hub.verification import verification_of

    targets = [item.target for item in plan.items] if plan is not None else [path]
    records = [verification_of(t) for t in targets]
    return any(r is not None and not r.verified for r in records)
