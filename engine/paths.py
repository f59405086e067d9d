"""Where Loadout keeps its files: one place, on platformdirs, overridable.

``LOADOUT_HOME`` puts every folder (config, data, cache, logs, models) under one
directory; tests point it at a temporary folder so they never touch a real profile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "loadout"
HOME_ENV = "LOADOUT_HOME"


@dataclass(frozen=True)
class Paths:
    """The folders Loadout writes to. Created on first use by :func:`ensure`."""

    config: Path
    data: Path
    cache: Path
    logs: Path
    models: Path

    def ensure(self) -> Paths:
        """Create every folder (parents included) and return ``self``."""
        for folder in (self.config, self.data, self.cache, self.logs, self.models):
            folder.mkdir(parents=True, exist_ok=True)
        return self


def paths() -> Paths:
    """Return the folders for this user, honouring ``LOADOUT_HOME``."""
    home = os.environ.get(HOME_ENV)
    if home:
        root = Path(home).expanduser()
        return Paths(
            config=root / "config",
            data=root / "data",
            cache=root / "cache",
            logs=root / "logs",
            models=root / "models",
        )
    data = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    return Paths(
        config=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        data=data,
        cache=Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)),
        logs=Path(platformdirs.user_log_dir(APP_NAME, appauthor=False)),
        models=data / "models",
    )
