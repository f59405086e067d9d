"""llama.cpp's own server API (``llama-server``'s native routes) over Loadout's engine.

Every route here reads its body with the OpenAI routes' reader and checks it with their
parsers (one validation path, the same limits): a native request is translated into the
OpenAI request it means, then answered in llama-server's shape.
"""
