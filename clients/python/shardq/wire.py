"""The message (docs/protocol.md, "The message") and the record a script
writes of a task that left pending (docs/protocol.md, "Reading a task back").

Every value is written in msgpack's shortest form, by hand, so the bytes are
exactly what the protocol's golden vectors hold.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

import msgpack

from .ids import id_time

#: The first byte of a compact message with a msgpack payload.
COMPACT_MSGPACK = 0x91
#: The first byte of a compact message with a raw payload.
COMPACT_RAW = 0x92
#: The MaxRetry a compact message stands for.
COMPACT_MAX_RETRY = 25
#: The default MaxRetry of a task.
DEFAULT_MAX_RETRY = 25


def pack_str(b: bytes) -> bytes:
    """A msgpack string of the bytes b, in the shortest form."""
    n = len(b)
    if n < 32:
        return bytes([0xA0 | n]) + b
    if n <= 0xFF:
        return bytes([0xD9, n]) + b
    if n <= 0xFFFF:
        return b"\xda" + struct.pack(">H", n) + b
    return b"\xdb" + struct.pack(">I", n) + b


def pack_bin(b: bytes) -> bytes:
    """A msgpack binary of b, in the shortest form (never a string)."""
    n = len(b)
    if n <= 0xFF:
        return bytes([0xC4, n]) + b
    if n <= 0xFFFF:
        return b"\xc5" + struct.pack(">H", n) + b
    return b"\xc6" + struct.pack(">I", n) + b


def pack_int(n: int) -> bytes:
    """A msgpack integer in the shortest form."""
    if 0 <= n < 128 or -32 <= n < 0:
        return struct.pack(">b", n) if n < 0 else bytes([n])
    if n >= 0:
        if n <= 0xFF:
            return b"\xcc" + struct.pack(">B", n)
        if n <= 0xFFFF:
            return b"\xcd" + struct.pack(">H", n)
        if n <= 0xFFFFFFFF:
            return b"\xce" + struct.pack(">I", n)
        return b"\xcf" + struct.pack(">Q", n)
    if n >= -0x80:
        return b"\xd0" + struct.pack(">b", n)
    if n >= -0x8000:
        return b"\xd1" + struct.pack(">h", n)
    if n >= -0x80000000:
        return b"\xd2" + struct.pack(">i", n)
    return b"\xd3" + struct.pack(">q", n)


@dataclass
class Message:
    """A task's message: its immutable fields as the wire carries them.

    ``id`` is the stored ID; ``payload`` the stored payload (the envelope);
    times are unix ms and durations ms, 0 meaning none.
    """

    id: bytes
    type: str
    payload: bytes = b""
    raw: bool = False
    group: str = ""
    max_retry: int = DEFAULT_MAX_RETRY
    timeout: int = 0
    deadline: int = 0
    retention: int = 0
    unique: str = ""
    enqueued_at: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    flow: str = ""

    def _stored_enqueued_at(self) -> int:
        """The enqueue time as written: 0 when the ID holds it."""
        return 0 if id_time(self.id) == self.enqueued_at else self.enqueued_at

    def compact(self) -> bool:
        """Whether the message is written in the compact form."""
        return (
            self.group == ""
            and self.max_retry == COMPACT_MAX_RETRY
            and self.timeout == 0
            and self.deadline == 0
            and self.retention == 0
            and self.unique == ""
            and not self.headers
            and self.flow == ""
            and self._stored_enqueued_at() == 0
            and self.id != b""
        )

    def _field_count(self) -> int:
        if self.flow:
            return 13
        if self.headers:
            return 12
        if self._stored_enqueued_at() != 0:
            return 11
        for n, v in ((10, self.unique), (9, self.retention), (8, self.deadline), (7, self.timeout),
                     (6, self.max_retry), (5, self.raw), (4, self.payload)):
            if v:
                return n
        return 3

    def encode(self, full: bool = False) -> bytes:
        """The message's bytes: the compact form when it allows it and
        ``full`` is false, else the full msgpack array."""
        if not full and self.compact():
            head = bytes([COMPACT_RAW if self.raw else COMPACT_MSGPACK])
            return head + pack_str(self.id) + pack_str(self.type.encode("utf-8")) + self.payload
        n = self._field_count()
        out = [bytes([0x90 | n]), pack_str(self.id), pack_str(self.group.encode("utf-8")),
               pack_str(self.type.encode("utf-8"))]
        values: list[bytes] = [
            pack_bin(self.payload),
            b"\xc3" if self.raw else b"\xc2",
            pack_int(self.max_retry),
            pack_int(self.timeout),
            pack_int(self.deadline),
            pack_int(self.retention),
            pack_str(self.unique.encode("utf-8")),
            pack_int(self._stored_enqueued_at()),
        ]
        out += values[: max(0, min(n, 11) - 3)]
        if n >= 12:
            items = sorted((k.encode("utf-8"), v.encode("utf-8")) for k, v in self.headers.items())
            count = len(items)
            if count < 16:
                out.append(bytes([0x80 | count]))
            elif count <= 0xFFFF:
                out.append(b"\xde" + struct.pack(">H", count))
            else:
                out.append(b"\xdf" + struct.pack(">I", count))
            for k, v in items:
                out += [pack_str(k), pack_str(v)]
        if n >= 13:
            out.append(pack_str(self.flow.encode("utf-8")))
        return b"".join(out)


class MalformedError(ValueError):
    """A message or record that does not decode."""


def _read_str(b: bytes, i: int) -> tuple[bytes, int]:
    """Read a msgpack string at b[i:]; return it and the index past it."""
    if i >= len(b):
        raise MalformedError("cut short before a string")
    c = b[i]
    if c & 0xE0 == 0xA0:
        n, i = c & 0x1F, i + 1
    elif c == 0xD9 and i + 2 <= len(b):
        n, i = b[i + 1], i + 2
    elif c == 0xDA and i + 3 <= len(b):
        n, i = struct.unpack_from(">H", b, i + 1)[0], i + 3
    elif c == 0xDB and i + 5 <= len(b):
        n, i = struct.unpack_from(">I", b, i + 1)[0], i + 5
    else:
        raise MalformedError(f"byte {c:#04x} at {i} is not a string")
    if i + n > len(b):
        raise MalformedError(f"a string of {n} bytes cut short")
    return b[i : i + n], i + n


def _text(v: Any) -> str:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "surrogateescape")
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    raise MalformedError(f"a {type(v).__name__} where a string was expected")


def _int(v: Any) -> int:
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int):
        raise MalformedError(f"a {type(v).__name__} where an integer was expected")
    return v


def decode_message(b: bytes) -> Message:
    """Decode a message of either form. A full message of any length from 3
    is read: missing fields are zero, fields past 13 skipped. An absent
    enqueue time is the generated ID's millisecond."""
    if not b:
        raise MalformedError("an empty message")
    if b[0] in (COMPACT_MSGPACK, COMPACT_RAW):
        sid, i = _read_str(b, 1)
        typ, i = _read_str(b, i)
        m = Message(id=sid, type=_text(typ), payload=b[i:], raw=b[0] == COMPACT_RAW, max_retry=COMPACT_MAX_RETRY)
    else:
        try:
            arr = msgpack.unpackb(b, raw=True, strict_map_key=False)
        except Exception as e:  # msgpack raises several types
            raise MalformedError(f"not msgpack: {e}") from None
        if not isinstance(arr, (list, tuple)) or len(arr) < 3:
            raise MalformedError("not an array of 3 fields or more")
        f = list(arr[:13]) + [None] * (13 - min(len(arr), 13))
        if not isinstance(f[0], bytes):
            raise MalformedError("the ID is not a string")
        payload = f[3] if f[3] is not None else b""
        if not isinstance(payload, bytes):
            raise MalformedError("the payload is not binary")
        headers: dict[str, str] = {}
        if f[11] is not None:
            if not isinstance(f[11], dict):
                raise MalformedError("the headers are not a map")
            headers = {_text(k): _text(v) for k, v in f[11].items()}
        m = Message(
            id=f[0], group=_text(f[1]), type=_text(f[2]), payload=payload, raw=bool(f[4]),
            max_retry=_int(f[5]), timeout=_int(f[6]), deadline=_int(f[7]), retention=_int(f[8]),
            unique=_text(f[9]), enqueued_at=_int(f[10]), headers=headers, flow=_text(f[12]),
        )
    if m.enqueued_at == 0:
        m.enqueued_at = id_time(m.id) or 0
    return m


@dataclass
class Record:
    """A task's mutable state once it left pending, as the scripts write it:
    a msgpack array in this order. Times are unix ms, 0 meaning none."""

    state: str = ""
    attempts: int = 0
    token: int = 0
    worker: str = ""
    last_error: bytes = b""  # may be an envelope (use 0x05)
    last_failed_at: int = 0
    started_at: int = 0
    finished_at: int = 0
    next_at: int = 0
    group: str = ""


def decode_record(b: bytes) -> Record:
    """Decode a record array of any length: missing fields zero, extra ones
    skipped."""
    try:
        arr = msgpack.unpackb(b, raw=True, strict_map_key=False)
    except Exception as e:
        raise MalformedError(f"record of {len(b)} bytes is not msgpack: {e}") from None
    if not isinstance(arr, (list, tuple)):
        raise MalformedError(f"record of {len(b)} bytes is not an array")
    f = list(arr[:10]) + [None] * (10 - min(len(arr), 10))
    err = f[4] if isinstance(f[4], bytes) else _text(f[4]).encode("utf-8", "surrogateescape")
    return Record(
        state=_text(f[0]), attempts=_int(f[1]), token=_int(f[2]), worker=_text(f[3]), last_error=err,
        last_failed_at=_int(f[5]), started_at=_int(f[6]), finished_at=_int(f[7]), next_at=_int(f[8]),
        group=_text(f[9]),
    )


def decode_progress(b: bytes) -> Optional[Mapping[str, Any]]:
    """Decode a progress value: a msgpack map of ``p`` (percent), ``m``
    (message, maybe an envelope) and ``t`` (unix ms); None when it does
    not decode."""
    try:
        v = msgpack.unpackb(b, raw=True, strict_map_key=False)
    except Exception:
        return None
    if not isinstance(v, dict):
        return None
    return {_text(k): v[k] for k in v}
