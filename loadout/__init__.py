"""Loadout: a desktop launcher for local LLMs (GUI in ``app``, engine in ``engine``,
pure planning in ``planner``). This package holds the ``loadout`` entry point."""

from __future__ import annotations

__version__ = "0.1.0"
