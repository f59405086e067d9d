"""Errors raised by the planner's input adapters (the planner itself returns values)."""

from __future__ import annotations


class PlannerError(Exception):
    """Base class of every planner error."""


class GGUFError(PlannerError, ValueError):
    """A GGUF header that cannot be read: truncated, hostile or not a GGUF at all."""


class UnsupportedModelError(PlannerError, ValueError):
    """A well-formed GGUF whose architecture or tensor types the planner cannot price."""


class InventoryError(PlannerError, ValueError):
    """An inventory (rig file) that does not follow the ``loadout.inventory/1`` schema."""
