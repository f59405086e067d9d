"""Reusable widgets (memory map, GPU roles)."""
