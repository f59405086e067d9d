"""The desktop app's settings: a frozen value, saved as JSON in the user config folder."""

from __future__ import annotations

import ipaddress
import json
import logging
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.paths import paths

log = logging.getLogger(__name__)

TASK_KINDS: tuple[str, ...] = ("chat", "code", "agent", "math", "creative")
FILE_NAME = "app-settings.json"


@dataclass(frozen=True)
class AppSettings:
    """What the Settings page edits. Bytes are integers."""

    model_folders: tuple[str, ...] = field(default=())
    language: str = ""                      # "" follows the system
    theme: str = "system"                   # system / light / dark
    gpu_reserve_bytes: int = 1 << 30        # kept free on every GPU
    host_reserve_bytes: int = 5 * 10**9     # kept free in RAM for the desktop
    default_task: str = "chat"
    scan_other_apps: bool = True            # list LM Studio, Ollama, HF cache models too
    rpc_workers: tuple[str, ...] = field(default=())  # HOST:PORT of the cluster's workers
    last_model: str = ""                    # the model loaded last (loaded at start)
    serve_library: bool = False             # the engine serves every model of the library

    def with_changes(self, **changes: Any) -> AppSettings:
        """A copy with some fields changed."""
        return replace(self, **changes)


def settings_file() -> Path:
    """Where the settings are saved."""
    return paths().config / FILE_NAME


def load_settings(path: Path | None = None) -> AppSettings:
    """Read the settings; a missing or damaged file gives the defaults (and a log line)."""
    target = path or settings_file()
    try:
        doc = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return AppSettings()
    except (OSError, ValueError) as exc:
        log.warning("settings file %s unreadable (%s); using defaults", target, exc)
        return AppSettings()
    defaults = AppSettings()
    try:
        task = str(doc.get("default_task", defaults.default_task))
        return AppSettings(
            model_folders=tuple(str(f) for f in doc.get("model_folders", ())),
            language=str(doc.get("language", "")),
            theme=str(doc.get("theme", "system")),
            gpu_reserve_bytes=max(0, int(doc.get("gpu_reserve_bytes",
                                                 defaults.gpu_reserve_bytes))),
            host_reserve_bytes=max(0, int(doc.get("host_reserve_bytes",
                                                  defaults.host_reserve_bytes))),
            default_task=task if task in TASK_KINDS else defaults.default_task,
            scan_other_apps=bool(doc.get("scan_other_apps", defaults.scan_other_apps)),
            rpc_workers=_worker_addresses(doc.get("rpc_workers", ()), target),
            last_model=str(doc.get("last_model", "") or ""),
            serve_library=doc.get("serve_library") is True,
        )
    except (TypeError, ValueError, AttributeError) as exc:
        log.warning("settings file %s has bad values (%s); using defaults", target, exc)
        return AppSettings()


def worker_address(text: str) -> str:
    """``text`` as a worker address in one spelling (``HOST:PORT``, ``[v6]:PORT``).

    Raises:
        ValueError: not ``HOST:PORT`` (the port defaults to 50052 when left out).
    """
    from engine.rpc import parse_endpoint

    try:
        host, port = parse_endpoint(text)
        if ":" in host:
            ipaddress.IPv6Address(host)
    except ValueError:
        raise ValueError(f"not a worker address: {text!r} (expected HOST:PORT)") from None
    if any(c.isspace() or c in "/@?#" for c in host):
        raise ValueError(f"not a worker address: {text!r} (expected HOST:PORT)")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _worker_addresses(entries: Any, target: Path) -> tuple[str, ...]:
    """The saved worker addresses that parse, each once; the others dropped with a log line."""
    if isinstance(entries, str) or not isinstance(entries, list | tuple):
        log.warning("settings file %s: rpc_workers is not a list; ignored", target)
        return ()
    out: list[str] = []
    for entry in entries:
        try:
            if not isinstance(entry, str):
                raise ValueError(entry)
            address = worker_address(entry)
        except ValueError:
            log.warning("settings file %s: bad worker address %r dropped", target, entry)
            continue
        if address not in out:
            out.append(address)
    return tuple(out)


def save_settings(settings: AppSettings, path: Path | None = None) -> Path:
    """Write the settings atomically; returns the file written."""
    target = path or settings_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    doc = asdict(settings)
    doc["model_folders"] = list(settings.model_folders)
    doc["rpc_workers"] = list(settings.rpc_workers)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    tmp.replace(target)
    return target
