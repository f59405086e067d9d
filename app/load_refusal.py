"""What the app says when a load is asked for and not started: why, and what to do."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication

from app.texts import fit_reason

if TYPE_CHECKING:
    from planner.plan_types import Plan

log = logging.getLogger(__name__)


def refusal_text(reason: str, model_name: str, plan: Plan | None) -> str:
    """The sentence for a :attr:`app.engine_control.EngineControl.sig_load_refused` code.

    Args:
        reason: ``does_not_fit``, ``whatif`` or ``no_plan``.
        model_name: the file name of the model that was to be loaded ("" when none).
        plan: its plan (the reasons it does not fit come from it).
    """
    if reason == "does_not_fit" and plan is not None and _refused_by_kv_type(plan):
        return QCoreApplication.translate(  # memory is not the reason: say only why
            "LoadRefusal", "{name} was not loaded. {why}").format(
                name=model_name, why=fit_reason(plan))
    if reason == "does_not_fit" and plan is not None:
        return QCoreApplication.translate(
            "LoadRefusal",
            "{name} was not loaded: it does not fit in this machine's memory. {why} Choose a "
            "smaller model or quantization on the Models page, or a shorter context on the "
            "Plan page.").format(name=model_name, why=fit_reason(plan))
    if reason == "whatif":
        return QCoreApplication.translate(
            "LoadRefusal",
            "{name} was not loaded: its plan is for the what-if rig. Go back to this machine "
            "on the Plan page to load it.").format(name=model_name)
    return QCoreApplication.translate(
        "LoadRefusal",
        "No model to load yet: choose one on the Models page (or the demo model); it loads "
        "once its plan is made.")


def _refused_by_kv_type(plan: Plan) -> bool:
    """Whether llama.cpp would refuse the plan's pinned KV type (not its memory)."""
    return any(getattr(r, "value", r) == "kv_type_not_whole_blocks" for r in plan.reasons)

