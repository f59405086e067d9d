"""``loadout serve``: the OpenAI-compatible HTTP server over one Engine (same process)."""
