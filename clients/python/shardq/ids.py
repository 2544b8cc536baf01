"""Task IDs: the public and stored forms, and generated UUIDv7s
(docs/protocol.md, "Task IDs")."""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Optional

_HEX = frozenset("0123456789abcdef")


def _canonical_uuid(text: str) -> Optional[bytes]:
    """The 16 bytes of canonical lowercase UUID text, or None."""
    if len(text) != 36:
        return None
    for i, ch in enumerate(text):
        if i in (8, 13, 18, 23):
            if ch != "-":
                return None
        elif ch not in _HEX:
            return None
    return bytes.fromhex(text.replace("-", ""))


def stored_id(public: str) -> bytes:
    """Return the stored form of a public task ID.

    Canonical lowercase UUID text becomes its 16 bytes; an ID of exactly 16
    bytes gets ``0x00`` appended; any other is its UTF-8 bytes as given.
    """
    packed = _canonical_uuid(public)
    if packed is not None:
        return packed
    raw = public.encode("utf-8")
    if len(raw) == 16:
        return raw + b"\x00"
    return raw


def public_id(stored: bytes) -> str:
    """Return the public form of a stored task ID (the inverse of stored_id)."""
    if len(stored) == 16:
        return str(uuid.UUID(bytes=bytes(stored)))
    if len(stored) == 17 and stored[16] == 0:
        return stored[:16].decode("utf-8", "surrogateescape")
    return bytes(stored).decode("utf-8", "surrogateescape")


def id_time(stored: bytes) -> Optional[int]:
    """The unix millisecond a UUIDv7 in its stored form holds, or None for
    any other ID (wrong length, version or variant)."""
    if len(stored) != 16 or stored[6] >> 4 != 7 or stored[8] & 0xC0 != 0x80:
        return None
    return int.from_bytes(stored[:6], "big")


class IDGenerator:
    """Makes UUIDv7 task IDs, increasing within the process.

    The 12 bits after the version are a sequence within a millisecond; when
    it runs out the millisecond moves on by one, so IDs stay increasing.
    The other 62 bits come from ``os.urandom``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._seq = 0

    def new(self, now_ms: Optional[int] = None) -> bytes:
        """Return a new ID in its stored form (16 bytes). Its millisecond is
        ``now_ms`` (default: the clock), or the last ID's when the clock went
        back or the sequence ran out."""
        ms = int(time.time() * 1000) if now_ms is None else now_ms
        with self._lock:
            if ms > self._last_ms:
                self._last_ms, self._seq = ms, 0
            else:
                self._seq += 1
                if self._seq > 0xFFF:
                    self._last_ms, self._seq = self._last_ms + 1, 0
            ms, seq = self._last_ms, self._seq
        rand = os.urandom(8)
        b = bytearray(ms.to_bytes(6, "big"))
        b += bytes([0x70 | (seq >> 8), seq & 0xFF])
        b += bytes([0x80 | (rand[0] & 0x3F)]) + rand[1:]
        return bytes(b)
