"""Rig files: an Inventory saved as JSON (``loadout detect --json > rig.json``)."""

from __future__ import annotations

import json
from pathlib import Path

from planner.errors import InventoryError
from planner.inventory import Inventory


def load_rig(path: str | Path) -> Inventory:
    """Read a rig file.

    Raises:
        InventoryError: the file is missing or unreadable, is not JSON, or does not follow
            the ``loadout.inventory/1`` schema — always with the file's name in the message.
    """
    rig = Path(path).expanduser()
    try:
        text = rig.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InventoryError(f"rig file {rig}: no such file") from exc
    except IsADirectoryError as exc:
        raise InventoryError(f"rig file {rig}: is a folder, not a file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InventoryError(f"rig file {rig}: cannot be read ({exc})") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InventoryError(
            f"rig file {rig}: not valid JSON (line {exc.lineno} column {exc.colno})") from exc
    try:
        return Inventory.from_json(doc)
    except InventoryError as exc:
        raise InventoryError(f"rig file {rig}: {exc}") from exc


def save_rig(inventory: Inventory, path: str | Path) -> None:
    """Write ``inventory`` as a rig file (atomically: a crash never leaves half a file)."""
    rig = Path(path).expanduser()
    tmp = rig.with_name(rig.name + ".tmp")
    tmp.write_text(json.dumps(inventory.to_json(), indent=2) + "\n", encoding="utf-8")
    tmp.replace(rig)


def inventory_for(rig: str | Path | None) -> Inventory:
    """The rig file's Inventory when one is given, else this machine's (detected)."""
    if rig:
        return load_rig(rig)
    from engine.hardware import detect

    return detect()
