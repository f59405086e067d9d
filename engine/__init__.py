"""The engine side: hardware detection, GGUF file access, llama.cpp runtime and server.

Never imports Qt; imports ``planner`` for the pure parts.
"""
