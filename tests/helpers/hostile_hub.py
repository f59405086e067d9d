"""A hub that lies: the local :class:`~tests.helpers.hub_server.HubServer` with faults an
attacker controlling ``HF_ENDPOINT`` (or a broken mirror) could produce.

- ``extra_listing``: raw entries added to every tree listing (``../`` paths, absolute
  paths, drive letters, malformed LFS ids, negative sizes ...).
- ``listed_size``: the size the listing claims for a file (the bytes served stay true).
- ``no_hash``: files listed without an LFS id (as small git files are); their
  ``X-Linked-Etag`` is ``etag_override`` when given, else absent.
- ``commit_override``: the ``X-Repo-Commit`` every HEAD answers (e.g. ``../../x``).
- ``truncate_every``: file -> bytes served before the connection drops, every time.
- ``short_body``: file -> bytes served per request, with a ``Content-Length`` that says so
  (a body that ends early without any transport error).
"""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.hub_server import HubFile, HubServer, _Handler


class HostileHub(HubServer):
    """A :class:`HubServer` with the faults above (all off by default)."""

    def __init__(self) -> None:
        super().__init__()
        self.extra_listing: list[dict[str, Any]] = []
        self.listed_size: dict[str, int] = {}
        self.no_hash: set[str] = set()
        self.etag_override: dict[str, str] = {}
        self.commit_override: str | None = None
        self.truncate_every: dict[str, int] = {}
        self.short_body: dict[str, int] = {}

    def start(self) -> HostileHub:
        import threading
        from http.server import ThreadingHTTPServer

        handler = type("HostileHandler", (_HostileHandler,), {"hub": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05})
        self._thread.start()
        return self


class _HostileHandler(_Handler):
    hub: HostileHub

    def _json(self, doc: object, body: bool, headers: dict[str, str]) -> None:
        if isinstance(doc, list):  # a tree listing
            doc = [self._lie(item) for item in doc] + list(self.hub.extra_listing)
        super()._json(doc, body, headers)

    def _lie(self, item: Any) -> Any:
        if not isinstance(item, dict) or item.get("type") != "file":
            return item
        item = json.loads(json.dumps(item))
        name = item["path"]
        if name in self.hub.listed_size:
            item["size"] = self.hub.listed_size[name]
            if isinstance(item.get("lfs"), dict):
                item["lfs"]["size"] = item["size"]
        if name in self.hub.no_hash:
            item.pop("lfs", None)
        return item

    def send_header(self, keyword: str, value: str) -> None:
        name = self._current_file()
        if keyword == "X-Repo-Commit" and self.hub.commit_override is not None:
            value = self.hub.commit_override
        if keyword == "X-Linked-Etag" and name in self.hub.no_hash:
            if name not in self.hub.etag_override:
                return
            value = f'"{self.hub.etag_override[name]}"'
        if keyword == "X-Linked-Size" and name in self.hub.listed_size:
            value = str(self.hub.listed_size[name])
        if keyword == "Content-Length" and name in self.hub.short_body \
                and self.path.startswith("/cdn/"):
            value = str(min(int(value), self.hub.short_body[name]))
        super().send_header(keyword, value)

    def _current_file(self) -> str:
        from urllib.parse import unquote, urlsplit

        path = unquote(urlsplit(self.path).path)
        marker = "/resolve/"
        if marker not in path:
            return ""
        return path.split(marker, 1)[1].split("/", 1)[-1]

    def _send_body(self, name: str, f: HubFile, start: int, length: int) -> None:
        if name in self.hub.short_body:
            length = min(length, self.hub.short_body[name])
        cut = self.hub.truncate_every.get(name)
        if cut is not None:
            with self.hub._lock:
                self.hub.cut_after[name] = cut  # the base server cuts once; re-arm it
        super()._send_body(name, f, start, length)
