"""A local HTTP server that speaks the parts of the Hugging Face hub protocol Loadout uses.

Reached through ``HF_ENDPOINT=http://127.0.0.1:PORT``. It serves files from disk (synthetic
GGUFs written with :mod:`tests.helpers.gguf_factory`) the way the hub does:

- ``GET /api/models/{repo}`` (``?blobs=true`` adds sizes and LFS sha256 to ``siblings``)
- ``GET /api/models/{repo}/tree/{revision}[/{path}]?recursive=...``: file listing with
  ``size``, git ``oid`` and ``lfs.oid`` (the sha256), paginated with a ``Link`` header
- ``HEAD|GET /{repo}/resolve/{revision}/{file}``: a 302 redirect to a "CDN" host (the same
  server under another host name) carrying ``X-Repo-Commit``, ``X-Linked-Etag`` (the
  sha256), ``X-Linked-Size`` and ``ETag``; the CDN answers ``Range`` requests with 206
- unknown repo: 401 with ``X-Error-Code: RepoNotFound``; unknown file: 404 with
  ``X-Error-Code: EntryNotFound`` (what ``hf_raise_for_status`` maps to its errors)

Faults for tests: cut a file's body after N bytes (once), go quiet after N bytes (every
time), serve corrupted bytes, delay every answer.
Every body byte served is counted per file (``bytes_served``).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

CHUNK = 64 * 1024


@dataclass
class HubFile:
    """One file of a served repo: bytes on disk, its sha256 and git blob id."""

    local: Path
    sha256: str
    oid: str

    @property
    def size(self) -> int:
        return self.local.stat().st_size


@dataclass
class HubRepo:
    """A served repo: files by path in the repo, and the commit ``main`` points at."""

    commit: str
    files: dict[str, HubFile] = field(default_factory=dict)


def sha256_of(path: Path) -> str:
    """The sha256 of a file's bytes (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class HubServer:
    """A threaded local hub. Use as a context manager or call :meth:`start`/:meth:`stop`."""

    def __init__(self, cdn_host: str = "localhost", page_size: int = 1000) -> None:
        self.repos: dict[str, HubRepo] = {}
        self.cdn_host = cdn_host
        self.page_size = page_size
        self.bytes_served: dict[str, int] = {}
        self.requests: list[tuple[str, str, str]] = []   # (method, path, range header)
        self.cut_after: dict[str, int] = {}   # file -> body bytes before the connection drops
        self.corrupt: set[str] = set()        # files whose served bytes are altered
        self.stall_after: dict[str, int] = {}  # file -> body bytes before the server goes quiet
        self.stall_s = 20.0
        self.delay_s = 0.0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- content -----------------------------------------------------------------
    def add_file(self, repo: str, path_in_repo: str, local: Path,
                 sha256: str | None = None) -> HubFile:
        """Serve ``local`` as ``path_in_repo`` of ``repo``.

        ``sha256`` may be given for large sparse files whose hash would be slow to compute;
        downloads of such a file then fail their integrity check, as they should.
        """
        entry = self.repos.setdefault(repo, HubRepo(commit=_fake_sha1(repo)))
        digest = sha256 or sha256_of(local)
        hub_file = HubFile(local=Path(local), sha256=digest, oid=_fake_sha1(digest))
        entry.files[path_in_repo] = hub_file
        entry.commit = _fake_sha1(entry.commit + path_in_repo + digest)
        return hub_file

    def served(self, path_in_repo: str) -> int:
        """Body bytes served so far for files with this path (any repo)."""
        with self._lock:
            return self.bytes_served.get(path_in_repo, 0)

    # -- lifecycle ---------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The endpoint to put in ``HF_ENDPOINT``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> HubServer:
        handler = type("Handler", (_Handler,), {"hub": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05})
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _fake_sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


_RESOLVE = re.compile(r"^/(?:cdn/)?(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
_API_MODEL = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)$")
_API_TREE = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?$")


class _Handler(BaseHTTPRequestHandler):
    hub: HubServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return

    # -- dispatch ----------------------------------------------------------------
    def do_HEAD(self) -> None:
        self._dispatch(body=False)

    def do_GET(self) -> None:
        self._dispatch(body=True)

    def _dispatch(self, body: bool) -> None:
        hub = self.hub
        split = urlsplit(self.path)
        path = unquote(split.path)
        with hub._lock:
            hub.requests.append((self.command, path, self.headers.get("Range", "")))
        if hub.delay_s:
            time.sleep(hub.delay_s)
        query = parse_qs(split.query)
        if m := _API_TREE.match(path):
            self._tree(m["repo"], m["path"] or "", query, body)
        elif m := _API_MODEL.match(path):
            self._model_info(m["repo"], query, body)
        elif m := _RESOLVE.match(path):
            if path.startswith("/cdn/"):
                self._cdn(m["repo"], m["file"], body)
            else:
                self._resolve(m["repo"], m["rev"], m["file"])
        else:
            self._error(404, "EntryNotFound", "no such endpoint")

    # -- API ---------------------------------------------------------------------
    def _find_repo(self, repo: str) -> HubRepo | None:
        found = self.hub.repos.get(repo)
        if found is None:
            self._error(401, "RepoNotFound", "Repository not found")
        return found

    def _tree(self, repo: str, prefix: str, query: dict[str, list[str]], body: bool) -> None:
        entry = self._find_repo(repo)
        if entry is None:
            return
        recursive = query.get("recursive", ["false"])[0].lower() == "true"
        items: list[dict[str, object]] = []
        folders: set[str] = set()
        base = prefix.strip("/")
        for name in sorted(entry.files):
            if base and not name.startswith(base + "/"):
                continue
            rest = name[len(base) + 1:] if base else name
            parts = rest.split("/")[:-1]
            # the hub lists folders too: the first level, or every level when recursive
            for depth in range(1, (len(parts) if recursive else min(1, len(parts))) + 1):
                folder = "/".join(([base] if base else []) + parts[:depth])
                if folder not in folders:
                    folders.add(folder)
                    items.append({"type": "directory", "oid": _fake_sha1(folder),
                                  "size": 0, "path": folder})
            if parts and not recursive:
                continue
            f = entry.files[name]
            items.append({"type": "file", "oid": f.oid, "size": f.size, "path": name,
                          "lfs": {"oid": f.sha256, "size": f.size, "pointerSize": 134}})
        start = int(query.get("cursor", ["0"])[0])
        page = items[start:start + self.hub.page_size]
        headers: dict[str, str] = {}
        if start + self.hub.page_size < len(items):
            nxt = (f"{self.hub.url}/api/models/{repo}/tree/main"
                   f"{'/' + quote(base) if base else ''}"
                   f"?recursive={str(recursive).lower()}&cursor={start + self.hub.page_size}")
            headers["Link"] = f'<{nxt}>; rel="next"'
        self._json(page, body, headers)

    def _model_info(self, repo: str, query: dict[str, list[str]], body: bool) -> None:
        entry = self._find_repo(repo)
        if entry is None:
            return
        blobs = query.get("blobs", ["false"])[0].lower() == "true"
        siblings: list[dict[str, object]] = []
        for name in sorted(entry.files):
            sib: dict[str, object] = {"rfilename": name}
            if blobs:
                f = entry.files[name]
                sib.update({"blobId": f.oid, "size": f.size,
                            "lfs": {"sha256": f.sha256, "size": f.size, "pointerSize": 134}})
            siblings.append(sib)
        self._json({"_id": _fake_sha1(repo)[:24], "id": repo, "modelId": repo,
                    "sha": entry.commit, "private": False, "gated": False, "disabled": False,
                    "tags": ["gguf"], "siblings": siblings}, body, {})

    def _resolve(self, repo: str, revision: str, name: str) -> None:
        entry = self._find_repo(repo)
        if entry is None:
            return
        f = entry.files.get(name)
        if f is None:
            self._error(404, "EntryNotFound", "Entry not found")
            return
        location = f"http://{self.hub.cdn_host}:{self.hub.port}/cdn/{repo}/resolve/{entry.commit}/{quote(name)}"
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("X-Repo-Commit", entry.commit)
        self.send_header("X-Linked-Etag", f'"{f.sha256}"')
        self.send_header("X-Linked-Size", str(f.size))
        self.send_header("ETag", f'"{f.oid}"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _cdn(self, repo: str, name: str, body: bool) -> None:
        entry = self.hub.repos.get(repo)
        f = entry.files.get(name) if entry else None
        if f is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = f.size
        start, end = 0, size - 1
        status = 200
        wanted = self.headers.get("Range")
        if wanted:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted.strip())
            if not m or (not m[1] and not m[2]):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if m[1]:
                start = int(m[1])
                end = min(int(m[2]), size - 1) if m[2] else size - 1
            else:  # suffix range
                start = max(0, size - int(m[2]))
            if start >= size or start > end:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        length = end - start + 1
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{f.sha256}"')
        self.send_header("Content-Length", str(length))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if body:
            self._send_body(name, f, start, length)

    def _send_body(self, name: str, f: HubFile, start: int, length: int) -> None:
        hub = self.hub
        with hub._lock:
            cut = hub.cut_after.pop(name, None)
        corrupt = name in hub.corrupt
        stall = hub.stall_after.get(name)
        sent = 0
        with open(f.local, "rb") as src:
            src.seek(start)
            while sent < length:
                block = src.read(min(CHUNK, length - sent))
                if not block:
                    break
                if cut is not None and sent + len(block) > cut:
                    block = block[: max(0, cut - sent)]
                if corrupt and block:
                    block = bytes([block[0] ^ 0xFF]) + block[1:]
                # counted before the write: a client that has read the block has it counted
                # (counted after, a test could look between its read and the count)
                with hub._lock:
                    hub.bytes_served[name] = hub.bytes_served.get(name, 0) + len(block)
                try:
                    self.wfile.write(block)
                except (BrokenPipeError, ConnectionResetError):
                    with hub._lock:
                        hub.bytes_served[name] -= len(block)
                    break
                sent += len(block)
                if stall is not None and sent >= stall:  # a network that stops answering
                    self.wfile.flush()
                    time.sleep(hub.stall_s)
                    self.close_connection = True
                    return
                if cut is not None and sent >= cut:
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return

    # -- helpers -----------------------------------------------------------------
    def _json(self, doc: object, body: bool, headers: dict[str, str]) -> None:
        data = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _error(self, status: int, code: str, message: str) -> None:
        data = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


@contextmanager
def running_hub(cdn_host: str = "localhost") -> Iterator[HubServer]:
    """A started :class:`HubServer`, stopped on exit."""
    server = HubServer(cdn_host=cdn_host).start()
    try:
        yield server
    finally:
        server.stop()


def write_split_llama(path: Path, shards: int, shape: object | None = None,
                      seed: int = 0) -> list[Path]:
    """A loadable llama model written as ``shards`` files ``STEM-0000i-of-0000N.gguf``.

    Only the first file carries the model's metadata (as ``gguf-split`` writes them); every
    file carries ``split.no`` / ``split.count`` / ``split.tensors.count``.
    """
    import numpy as np
    from gguf import GGUFWriter

    from tests.helpers import gguf_factory as gf

    s = shape if isinstance(shape, gf.Shape) else gf.Shape()
    specs = gf.llama_tensors(s)
    per_file = -(-len(specs) // shards)
    writer = GGUFWriter(str(path), "llama", split_max_tensors=per_file)
    gf._common_kv("llama", s)(writer)
    gf._vocab(writer, s.n_vocab)
    rng = np.random.default_rng(seed)
    for name, dims, type_name in specs:
        arr = rng.standard_normal(tuple(reversed(dims)), dtype=np.float32) * 0.5
        if name.endswith("norm.weight"):
            arr = np.ones_like(arr)
        writer.add_tensor(name, arr.astype(np.float32 if len(dims) == 1 or type_name == "F32"
                                           else np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return list(writer.format_shard_names(Path(path)))
