"""Pure planning: model profiles, memory model, placement and speed prediction.

Nothing here touches files, sockets, clocks, Qt or llama.cpp: inputs come in as values
(a ``read_at`` function for GGUF headers, an ``Inventory`` for the machine).
"""
