"""Runtime language switching: English (the source), Simplified and Traditional Chinese.

Installing a translator makes Qt send ``LanguageChange`` to every widget; each page
re-sets its texts in ``changeEvent`` (its ``retranslate`` method).
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QLibraryInfo, QLocale, QTranslator

log = logging.getLogger(__name__)

# Shown in each language's own script, so they are never translated.
LANGUAGES: dict[str, str] = {"en": "English", "zh_CN": "简体中文", "zh_TW": "繁體中文"}
I18N_DIR = Path(__file__).resolve().parent.parent / "i18n"


def qm_file(language: str) -> Path:
    """Where the compiled translation of ``language`` lives."""
    return I18N_DIR / f"loadout_{language}.qm"


def system_language() -> str:
    """The supported language closest to the system locale."""
    name = QLocale.system().name()  # "zh_CN", "zh_TW", "en_US", ...
    if name.startswith("zh"):
        traditional = name in ("zh_TW", "zh_HK", "zh_MO") or "Hant" in QLocale.system().bcp47Name()
        return "zh_TW" if traditional else "zh_CN"
    return "en"


class LanguageSwitcher:
    """Owns the installed translators; :meth:`set_language` swaps them at runtime."""

    def __init__(self) -> None:
        self._translators: list[QTranslator] = []
        self.language = "en"

    def set_language(self, language: str) -> bool:
        """Switch every widget to ``language``; False if its translation is missing."""
        app = QCoreApplication.instance()
        if app is None or language not in LANGUAGES:
            return False
        for old in self._translators:
            app.removeTranslator(old)
        self._translators = []
        ok = True
        if language != "en":
            ours = QTranslator()
            if ours.load(str(qm_file(language))):
                self._translators.append(ours)
            else:
                log.warning("translation %s is missing (run i18n/build.py)", qm_file(language))
                ok = False
            qt_own = QTranslator()  # Qt's own strings (standard buttons, file dialogs)
            folder = QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
            # qtbase_*: the meta catalog qt_* fails to load when one of the modules it
            # names is not installed (PySide6's wheels leave some out)
            if qt_own.load(f"qtbase_{language}", folder) or \
                    qt_own.load(f"qt_{language}", folder):
                self._translators.append(qt_own)
        for translator in self._translators:
            app.installTranslator(translator)
        # Qt posts LanguageChange to every window; deliver it now, so that every text is
        # in the new language when this returns.
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LanguageChange)
        self.language = language if ok else "en"
        log.info("language %s", self.language)
        return ok
