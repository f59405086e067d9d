"""ctypes-level access to llama.cpp: model and context creation, batches, samplers, tokens.

llama-cpp-python binds the C API one function at a time; this package turns those calls
into a few small objects the scheduler drives. Nothing here starts threads or keeps state
beyond the native handles it owns.
"""
