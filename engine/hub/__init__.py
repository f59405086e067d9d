"""Models from the hub: remote headers, catalog, recommender, downloads, local library.

Public entry points (also what the desktop app calls; all Qt-free, all blocking, so run
them off the UI thread):

- :func:`engine.hub.remote.load_remote_profile` — ``hf:OWNER/REPO/FILE.gguf`` to a
  ``ModelProfile`` from ranged reads of the header only (split files too; cached);
- :func:`engine.hub.catalog.load_catalog` — the model families worth recommending, with
  sizes from the hub's listings (cached; says when it is offline);
- :func:`engine.hub.recommend.recommend` — ranked (model, quantization) choices for an
  inventory and a task, with a ``progress(done, total)`` callback;
- :func:`engine.hub.downloads.plan_download` / :func:`~engine.hub.downloads.download` —
  resumable, verified downloads with a ``progress(Progress)`` callback and a cancel
  ``threading.Event`` (pause); :func:`~engine.hub.downloads.discard` cancels for good;
  :func:`~engine.hub.downloads.pending_downloads` lists what can be resumed;
- :func:`engine.hub.library.scan` — GGUFs already on this machine, with
  :func:`~engine.hub.library.fit_badges`, :func:`~engine.hub.library.delete` (Loadout's
  own files only) and :func:`~engine.hub.library.find_downloaded`.

Errors are :mod:`engine.hub.errors` classes (all ``EngineError``).
"""
