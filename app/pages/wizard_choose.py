"""The wizard's choice step: the catalog ranked for this machine and task, each choice
with its fit badge, predicted decode speed and context, and the memory map of the one
selected. Ranking reads the hub (listings, headers), so it runs off the UI thread; an
unreachable hub is a message with a Retry button, never a crash.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.formatting import fmt_bytes, fmt_seconds, fmt_tokens, fmt_tps
from app.plan_view import memory_bars
from app.texts import code_sentence, task_text
from app.theme import is_dark, segment_color, warning_color
from app.widgets.memory_map import MemoryMap
from app.wizard_jobs import Problem, RecommendOutcome, find_recommendations
from app.workers import Job, WorkerRunner
from planner.inventory import Inventory

if TYPE_CHECKING:
    from engine.hub.recommend import Recommendation

log = logging.getLogger(__name__)

LANE = "wizard-recommend"
COLUMNS = 6
# Badge colours, from the memory map's palette: fits / reads from disk / does not fit.
_BADGE_SEGMENT = {"streams_from_disk": "compute", "does_not_fit": "over"}


class ChooseStep(QWidget):
    """The ranked choices; ``selected()`` is the one to download.

    Args:
        runner: where the ranking runs.
        catalog_file: another catalog than the bundled one (None: the bundled one).
    """

    sig_recommendations_listed = Signal(object)  # RecommendOutcome
    sig_choice_changed = Signal()

    def __init__(self, runner: WorkerRunner, catalog_file: Path | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        self._catalog_file = catalog_file
        self._asked: tuple[Inventory, str] | None = None
        self.outcome: RecommendOutcome | None = None
        self.busy = False
        self._progress: tuple[int, int] = (0, 0)
        self._rows: list[tuple[QTreeWidgetItem, Recommendation]] = []
        self._build()
        self.retranslate()

    def _build(self) -> None:
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(False)
        self.progress.setVisible(False)
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.progress)
        self.error_box = QFrame()
        self.error_box.setFrameShape(QFrame.Shape.StyledPanel)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setTextFormat(Qt.TextFormat.RichText)
        self.retry_button = QPushButton()
        self.retry_button.clicked.connect(self.retry)
        error_row = QHBoxLayout(self.error_box)
        error_row.addWidget(self.error_label, 1)
        error_row.addWidget(self.retry_button, 0, Qt.AlignmentFlag.AlignTop)
        self.error_box.setVisible(False)
        self.tree = QTreeWidget()
        self.tree.setObjectName("wizardChoices")
        self.tree.setColumnCount(COLUMNS)
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.tree.currentItemChanged.connect(self._on_tree_current_changed)
        self.details_box = QGroupBox()
        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.memory_map = MemoryMap()
        details = QVBoxLayout(self.details_box)
        details.addWidget(self.details)
        details.addWidget(self.memory_map)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.error_box)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.details_box)
        layout.addStretch()  # keeps the error message at the top when there is no list

    # -- work -------------------------------------------------------------------------
    def start(self, inventory: Inventory, task: str) -> None:
        """Rank the catalog for ``inventory`` and ``task`` (again only if either changed)."""
        ranked = self.outcome is not None and self.outcome.problem is None \
            and not self.outcome.estimated
        if self._asked == (inventory, task) and (self.busy or ranked):
            return
        self._asked = (inventory, task)
        catalog_file = self._catalog_file

        def job(j: Job) -> RecommendOutcome:
            return find_recommendations(inventory, task, catalog_file,
                                        lambda done, total: j.progress((done, total)))

        self.busy, self.outcome, self._progress = True, None, (0, 0)
        self._fill()
        self._show_selected()
        self._runner.submit(LANE, job, self._on_ranked, on_progress=self._on_ranking_progress,
                            on_failed=self._on_ranking_failed)
        self._refresh_status()

    def retry(self) -> None:
        """Rank again for the same machine and task (after the hub came back)."""
        if self._asked is not None:
            inventory, task = self._asked
            self.outcome = None
            self._asked = None
            self.start(inventory, task)

    def selected(self) -> Recommendation | None:
        """The Recommendation selected (None: nothing yet)."""
        item = self.tree.currentItem()
        return next((rec for row, rec in self._rows if row is item), None)

    def downloaded_path(self, spec: str) -> Path | None:
        """Where the choice ``spec`` already is on disk, if it was downloaded before."""
        return self.outcome.downloaded.get(spec) if self.outcome is not None else None

    def can_continue(self) -> bool:
        """A choice is selected, it fits this machine and it can be downloaded now."""
        choice = self.selected()
        return choice is not None and choice.fit.value != "does_not_fit" \
            and not choice.estimated

    def estimated(self) -> bool:
        """The choices are offline estimates: the hub is needed to download any of them."""
        return self.outcome is not None and self.outcome.estimated

    # -- results ----------------------------------------------------------------------
    def _on_ranking_progress(self, value: object) -> None:
        if isinstance(value, tuple) and len(value) == 2:
            self._progress = (int(value[0]), int(value[1]))
            self._refresh_status()

    def _on_ranking_failed(self, error: BaseException) -> None:
        self.busy = False
        self.outcome = RecommendOutcome(self._asked[1] if self._asked else "",
                                        problem=Problem.HUB, detail=str(error))
        self._refresh_status()
        self.sig_choice_changed.emit()

    def _on_ranked(self, outcome: RecommendOutcome) -> None:
        self.busy = False
        self.outcome = outcome
        self._fill()
        self._refresh_status()
        self.sig_recommendations_listed.emit(outcome)
        self.sig_choice_changed.emit()

    def _fill(self) -> None:
        self.tree.clear()
        self._rows = []
        result = self.outcome.result if self.outcome is not None else None
        for rec in result.items if result is not None else ():
            item = QTreeWidgetItem()
            self.tree.addTopLevelItem(item)
            self._rows.append((item, rec))
        self._texts()
        if self._rows:
            self.tree.setCurrentItem(self._rows[0][0])

    def _texts(self) -> None:
        """Write every row's cells (in the current language)."""
        dark = is_dark()
        for item, rec in self._rows:
            name = rec.name if self.downloaded_path(rec.spec) is None else \
                self.tr("{name} (downloaded)").format(name=rec.name)
            size = fmt_bytes(rec.download_bytes)
            if rec.estimated:
                name = self.tr("{name} (needs the internet to download)").format(name=name)
                size = self.tr("≈ {size} (estimate)").format(size=size)
            cells = [name, rec.quant, size, self.fit_text(rec.fit.value),
                     fmt_tps(rec.decode_tps), fmt_tokens(rec.context)]
            for col, text in enumerate(cells):
                item.setText(col, text)
            for col in (2, 4, 5):
                item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight
                                      | Qt.AlignmentFlag.AlignVCenter)
            item.setForeground(3, segment_color(_BADGE_SEGMENT.get(rec.fit.value, "kv"), dark))
            item.setToolTip(0, f"{name}\n{rec.repo}")  # the whole name, when the column cuts it
        self.tree.setHeaderLabels([self.tr("Model"), self.tr("Quantization"),
                                   self.tr("Download"), self.tr("Fits"),
                                   self.tr("Decode t/s (predicted)"), self.tr("Context")])

    def _on_tree_current_changed(self, *_items: object) -> None:
        self._show_selected()
        self.sig_choice_changed.emit()

    def _show_selected(self) -> None:
        rec = self.selected()
        self.details_box.setVisible(rec is not None)
        if rec is None:
            self.memory_map.set_bars(())
            return
        inventory = self._asked[0] if self._asked else None
        names = {g.index: g.name for g in inventory.gpus} if inventory else {}
        self.memory_map.set_bars(memory_bars(rec.plan, names)
                                 if rec.plan is not None else ())
        self.details_box.setTitle(self.tr("{name} · {quant}: where every byte goes").format(
            name=rec.name, quant=rec.quant))
        lines = [self.tr("{quality} quality ({bits:.1f} bits per weight), {size} to download, "
                         "licence {licence}.").format(
            quality=self.quality_text(rec.quality_tier), bits=rec.bits,
            size=("≈ " if rec.estimated else "") + fmt_bytes(rec.download_bytes),
            licence=rec.licence),
            self.tr("Predicted here: decode {decode} t/s, prefill {prefill} t/s, time to "
                    "first token {ttft}; context {context}.").format(
            decode=fmt_tps(rec.decode_tps), prefill=fmt_tps(rec.prefill_tps),
            ttft=fmt_seconds(rec.ttft_s), context=fmt_tokens(rec.context))]
        if rec.estimated:
            lines.append(self.tr("<b>Estimated offline</b>: the size is the catalog's "
                                 "parameter count × {bits:.2f} bits per weight, and the speed "
                                 "is planned for a model of that size and shape. Downloading "
                                 "needs the internet.").format(bits=rec.bits))
        if rec.fit.value == "does_not_fit":
            lines.append(self.tr("<b>This model does not fit this machine.</b> Pick a "
                                 "smaller one."))
        warn = warning_color()
        lines += [f'<span style="color: {warn}">⚠</span> {self.warning_text(code)}'
                  for code in rec.warnings]
        self.details.setText("<br>".join(lines))

    # -- texts ------------------------------------------------------------------------
    def fit_text(self, fit: str) -> str:
        """A fit badge (``engine.hub.recommend.Fit`` value) in words."""
        texts = {"all_on_gpu": self.tr("All on GPU"),
                 "experts_in_ram": self.tr("Experts in RAM"),
                 "partly_in_ram": self.tr("Partly in RAM"),
                 "in_ram": self.tr("In RAM (CPU)"),
                 "streams_from_disk": self.tr("Reads from disk (slow)"),
                 "does_not_fit": self.tr("Does not fit")}
        return texts.get(fit, fit)

    def quality_text(self, tier: str) -> str:
        """A quality tier in words."""
        texts = {"near_lossless": self.tr("Near-lossless"), "high": self.tr("High"),
                 "good": self.tr("Good"), "fair": self.tr("Fair"),
                 "low": self.tr("Low")}
        return texts.get(tier, tier)

    def warning_text(self, code: str) -> str:
        """A recommendation warning code as a sentence."""
        if code == "low_bits":
            return self.tr("About 3 bits per weight or fewer: answers get noticeably worse.")
        return code_sentence(code)

    def _problem_text(self, outcome: RecommendOutcome) -> str:
        if outcome.problem is Problem.OFFLINE:
            return self.tr("<b>The model hub cannot be reached</b>, so Loadout cannot list "
                           "models to download. Check the internet connection (and proxy "
                           "settings), then press Retry.")
        if outcome.problem is Problem.NOTHING_JUDGED:
            return self.tr("<b>No model of the catalog could be judged.</b> Press Retry; "
                           "if it happens again, the details are in the log file.")
        return self.tr("<b>The recommendations could not be made:</b> {detail}. Press "
                       "Retry.").format(detail=outcome.detail)

    def _refresh_status(self) -> None:
        outcome = self.outcome
        task = task_text(self._asked[1]) if self._asked else ""
        self.progress.setVisible(self.busy)
        done, total = self._progress
        self.progress.setRange(0, max(total, 0))
        self.progress.setValue(done)
        problem = outcome is not None and outcome.problem is not None
        estimated = outcome is not None and outcome.estimated
        self.error_box.setVisible(problem or estimated)
        self.tree.setVisible(not problem)
        self.retry_button.setEnabled(not self.busy)
        if self.busy:
            self.status.setText(self.tr("Planning every model of the catalog on this machine "
                                        "for {task}…").format(task=task))
        elif outcome is not None and outcome.problem is not None:
            self.status.setText("")
            self.error_label.setText(self._problem_text(outcome))
        elif outcome is not None and outcome.estimated:
            self.status.setText(self.tr("Best first for {task}, estimated for this machine. "
                                        "Select one to see where it would go.").format(
                task=task))
            self.error_label.setText(self.tr(
                "<b>The model hub cannot be reached.</b> These are the catalog's models with "
                "estimated sizes and predicted speeds on this machine; downloading needs the "
                "internet. Check the connection, then press Retry."))
        elif outcome is not None and outcome.result is not None:
            status = outcome.result.catalog_status
            text = self.tr("Best first for {task}, each planned on this machine. Select one "
                           "to see where it would go.").format(task=task)
            if status.startswith("offline"):
                text += " " + self.tr("Offline: sizes are from the hub's listing of "
                                      "{when}.").format(when=status.rpartition("from ")[2])
            self.status.setText(text)
        else:
            self.status.setText("")

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.retry_button.setText(self.tr("Retry"))
        self._texts()
        self._refresh_status()
        self._show_selected()
