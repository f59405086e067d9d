"""The planner's codes as the sentences the desktop app shows, for the terminal.

One translation source: the sentences are ``app.texts`` (``CODE_SENTENCES``) and the
Plan page's own templates, in the language the app would use (its setting, else the
system's). ``--json`` output never comes here: it keeps the codes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planner.plan_types import Advice, Bottleneck, Plan

log = logging.getLogger(__name__)

# The window's template of one advice line (app/pages/plan_page.py, context PlanPage).
_ADVICE_CONTEXT = "PlanPage"
_ADVICE_TEMPLATE = "{advice} → decode {tps} t/s"


@contextmanager
def user_language() -> Iterator[str]:
    """Translate into the app's language while the block runs; yields its name.

    English (the source) needs nothing; another language installs the app's translator
    on the running Qt application (one is made when there is none) and removes it after,
    so nothing else in the process changes language.
    """
    from app.i18n import LANGUAGES, qm_file, system_language
    from app.settings_store import load_settings

    language = load_settings().language or system_language()
    if language == "en" or language not in LANGUAGES:
        yield "en"
        return
    from PySide6.QtCore import QCoreApplication, QTranslator

    app = QCoreApplication.instance() or QCoreApplication([])
    translator = QTranslator()
    if not translator.load(str(qm_file(language))):
        log.warning("translation %s is missing: English it is", qm_file(language))
        yield "en"
        return
    app.installTranslator(translator)
    try:
        yield language
    finally:
        app.removeTranslator(translator)


def sentence(code: str, fields: dict[str, Any] | None = None) -> str:
    """A planner code as the window's sentence (numbers as people read them)."""
    from app.texts import code_sentence

    return code_sentence(code, fields)


def advice_line(advice: Advice) -> str:
    """One what-if as the window words it: "Add RAM (to 64.0 GiB), ... → decode 25 t/s"."""
    from PySide6.QtCore import QCoreApplication

    from app.formatting import fmt_tps

    text = QCoreApplication.translate(_ADVICE_CONTEXT, _ADVICE_TEMPLATE).format(
        advice=sentence(advice.code.value, dict(advice.numbers)),
        tps=fmt_tps(advice.decode_tps))
    return text


def shown_advice(plan: Plan) -> list[Advice]:
    """The advice the window shows: what would make it faster, or "no change needed"
    (what-ifs that do not help stay in --json)."""
    return [a for a in plan.advice if a.helps or a.code.value == "advice_no_change_needed"]


def bottleneck_line(bottleneck: Bottleneck) -> str:
    """The bottleneck's sentence, with where and how much of each token's time."""
    return (f"{sentence(bottleneck.kind.value)} On {bottleneck.device}, {bottleneck.what}: "
            f"{bottleneck.share * 100:.0f}% of the time per token.")


def messages(plan: Plan) -> list[str]:
    """Warnings (marked ``!``), then reasons and decisions, each code once, as sentences:
    what the Plan page lists."""
    from app.plan_view import messages as page_messages

    return [("! " if m.warning else "- ") + sentence(m.code, dict(m.fields))
            for m in page_messages(plan)]


def role_line(reason: str | None) -> str:
    """A GPU role's reason code as its sentence ("" for none)."""
    return sentence(reason) if reason else ""


# The wizard's own sentence for this recommendation code (app/pages/wizard_choose.py,
# context ChooseStep); every other code is a planner code.
_LOW_BITS = ("ChooseStep",
             "About 3 bits per weight or fewer: answers get noticeably worse.")


def recommendation_warning(code: str) -> str:
    """A recommendation's warning code as the wizard words it."""
    if code == "low_bits":
        from PySide6.QtCore import QCoreApplication

        return QCoreApplication.translate(*_LOW_BITS)
    return sentence(code)
