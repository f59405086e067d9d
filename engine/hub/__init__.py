"""Models from the hub: remote headers, catalog, recommender, downloads, local library.

Public entry points (also what the desktop app calls):

- :func:`engine.hub.remote.load_remote_profile` — ``hf:OWNER/REPO/FILE.gguf`` to a
  ``ModelProfile`` from ranged reads of the header only;
- :func:`engine.hub.catalog.load_catalog` — the model families worth recommending;
- :func:`engine.hub.recommend.recommend` — ranked (model, quantization) choices;
- :func:`engine.hub.downloads.download` — resumable, verified downloads with progress;
- :func:`engine.hub.library.scan` — GGUFs already on this machine.
"""
