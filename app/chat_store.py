"""Conversations kept in SQLite in the user data folder, written as they happen.

Every change is committed at once (WAL journal), and a streaming answer is saved *before*
each piece of it is shown, so a crash of the app loses nothing the user has already seen.
The streaming worker's connection also waits for the disk (``synchronous=FULL``) so a
crash of the machine loses nothing shown either; the UI thread's connection does not
(``NORMAL``: a commit survives the app's crash at once, the machine's from the next synced
commit, the answer's first piece), so the window never waits for the disk. One
:class:`ChatStore` per thread: the UI thread and the streaming worker each open their own
connection to the same file.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL DEFAULT '',
    system_prompt TEXT NOT NULL DEFAULT '',
    sampling TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL DEFAULT '',
    timings TEXT NOT NULL DEFAULT '{}',
    finish_reason TEXT,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, id);
CREATE TABLE IF NOT EXISTS attachments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    mime TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS attachments_by_message ON attachments(message_id, id);
"""

# Low randomness: what small models (the demo first) answer best with, as their authors advise.
DEFAULT_SAMPLING: dict[str, Any] = {"temperature": 0.2, "top_p": 0.9, "max_tokens": 1024}


def default_db_path() -> Path:
    """``chats.sqlite3`` in the user data folder (``LOADOUT_HOME`` honoured)."""
    from engine.paths import paths

    folder = paths().data
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "chats.sqlite3"


@dataclass(frozen=True)
class Message:
    """One message; ``timings`` holds the engine's speed figures of an answer."""

    id: int
    role: str
    content: str
    timings: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    images: tuple[int, ...] = ()  # attachment ids (images a question carries)


@dataclass(frozen=True)
class Conversation:
    """A conversation's header (its messages are read with :meth:`ChatStore.messages`)."""

    id: int
    title: str
    system_prompt: str
    sampling: dict[str, Any]
    updated: float


class ChatStore:
    """The conversations database.

    Args:
        path: the SQLite file (created with its folder when missing).
        wait_for_disk: every commit waits until it is on the disk (``synchronous=FULL``);
            False on the UI thread (``NORMAL``).
    """

    def __init__(self, path: Path | None = None, wait_for_disk: bool = True) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={'FULL' if wait_for_disk else 'NORMAL'}")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    # -- conversations ----------------------------------------------------------------
    def create(self, title: str = "", system_prompt: str = "",
               sampling: dict[str, Any] | None = None) -> int:
        """A new conversation; returns its id."""
        now = time.time()
        cur = self._db.execute(
            "INSERT INTO conversations (title, system_prompt, sampling, created, updated) "
            "VALUES (?, ?, ?, ?, ?)",
            (title, system_prompt, json.dumps(sampling or DEFAULT_SAMPLING), now, now))
        return int(cur.lastrowid or 0)

    def conversations(self) -> list[Conversation]:
        """Every conversation, the most recently used first."""
        rows = self._db.execute(
            "SELECT id, title, system_prompt, sampling, updated FROM conversations "
            "ORDER BY updated DESC, id DESC").fetchall()
        return [Conversation(int(r[0]), str(r[1]), str(r[2]), _loads(r[3]), float(r[4]))
                for r in rows]

    def conversation(self, conversation_id: int) -> Conversation | None:
        """One conversation's header, or None."""
        for conv in self.conversations():
            if conv.id == conversation_id:
                return conv
        return None

    def update(self, conversation_id: int, *, title: str | None = None,
               system_prompt: str | None = None,
               sampling: dict[str, Any] | None = None) -> None:
        """Change a conversation's title, system prompt or sampling settings."""
        sets, args = ["updated = ?"], list[Any]([time.time()])
        for column, value in (("title", title), ("system_prompt", system_prompt),
                              ("sampling", json.dumps(sampling) if sampling is not None
                               else None)):
            if value is not None:
                sets.append(f"{column} = ?")
                args.append(value)
        self._db.execute(f"UPDATE conversations SET {', '.join(sets)} WHERE id = ?",
                         (*args, conversation_id))

    def delete(self, conversation_id: int) -> None:
        """Delete a conversation and its messages."""
        self._db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # -- messages ---------------------------------------------------------------------
    def messages(self, conversation_id: int) -> list[Message]:
        """A conversation's messages in order."""
        rows = self._db.execute(
            "SELECT id, role, content, timings, finish_reason FROM messages "
            "WHERE conversation_id = ? ORDER BY id", (conversation_id,)).fetchall()
        images: dict[int, list[int]] = {}
        for att_id, msg_id in self._db.execute(
                "SELECT a.id, a.message_id FROM attachments a JOIN messages m "
                "ON a.message_id = m.id WHERE m.conversation_id = ? ORDER BY a.id",
                (conversation_id,)):
            images.setdefault(int(msg_id), []).append(int(att_id))
        return [Message(int(r[0]), str(r[1]), str(r[2]), _loads(r[3]), r[4],
                        tuple(images.get(int(r[0]), ()))) for r in rows]

    def add_image(self, message_id: int, mime: str, data: bytes) -> int:
        """Attach an image file to a message; returns the attachment's id."""
        cur = self._db.execute("INSERT INTO attachments (message_id, mime, data) "
                               "VALUES (?, ?, ?)", (message_id, mime, sqlite3.Binary(data)))
        return int(cur.lastrowid or 0)

    def image(self, attachment_id: int) -> tuple[str, bytes] | None:
        """An attachment's (mime type, bytes), or None."""
        row = self._db.execute("SELECT mime, data FROM attachments WHERE id = ?",
                               (attachment_id,)).fetchone()
        return (str(row[0]), bytes(row[1])) if row else None

    def add_message(self, conversation_id: int, role: str, content: str) -> int:
        """Append a message; returns its id."""
        now = time.time()
        cur = self._db.execute(
            "INSERT INTO messages (conversation_id, role, content, created) VALUES (?, ?, ?, ?)",
            (conversation_id, role, content, now))
        self._db.execute("UPDATE conversations SET updated = ? WHERE id = ?",
                         (now, conversation_id))
        return int(cur.lastrowid or 0)

    def set_content(self, message_id: int, content: str) -> None:
        """Replace a message's text (a streaming answer, as it grows)."""
        self._db.execute("UPDATE messages SET content = ? WHERE id = ?", (content, message_id))

    def finish_message(self, message_id: int, content: str, timings: dict[str, Any],
                       finish_reason: str | None) -> None:
        """Record an answer's final text, speed figures and finish reason."""
        self._db.execute(
            "UPDATE messages SET content = ?, timings = ?, finish_reason = ? WHERE id = ?",
            (content, json.dumps(timings), finish_reason, message_id))

    def delete_from(self, conversation_id: int, message_id: int) -> None:
        """Delete ``message_id`` and every later message of the conversation."""
        self._db.execute("DELETE FROM messages WHERE conversation_id = ? AND id >= ?",
                         (conversation_id, message_id))


def _loads(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
