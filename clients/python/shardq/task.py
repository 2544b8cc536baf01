"""A task and its options (docs/protocol.md, "Task options")."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping, Optional, Union

import msgpack

from .errors import InvalidError

#: A duration: a timedelta, or a number of seconds (int or float, rounded
#: to the millisecond).
Duration = Union[timedelta, int, float]
#: A moment: an aware datetime, or unix seconds (int or float).
Moment = Union[datetime, int, float]

_INT64_MAX = (1 << 63) - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$")


def duration_ms(what: str, d: Duration) -> int:
    """A duration in integer milliseconds (a timedelta's microseconds
    truncated, a float's seconds rounded)."""
    if isinstance(d, bool):
        raise InvalidError(f"invalid {what} {d!r}: a bool, want a timedelta or seconds")
    if isinstance(d, timedelta):
        return d // timedelta(milliseconds=1)
    if isinstance(d, int):
        return d * 1000
    if isinstance(d, float):
        if d != d or d in (float("inf"), float("-inf")):
            raise InvalidError(f"invalid {what} {d!r}: not a finite number of seconds")
        return round(d * 1000)
    raise InvalidError(f"invalid {what} {d!r}: a {type(d).__name__}, want a timedelta or seconds")


def moment_ms(what: str, t: Moment) -> int:
    """A moment in unix milliseconds."""
    if isinstance(t, bool):
        raise InvalidError(f"invalid {what} {t!r}: a bool, want a datetime or unix seconds")
    if isinstance(t, datetime):
        if t.tzinfo is None or t.utcoffset() is None:
            raise InvalidError(f"invalid {what} {t!r}: a naive datetime; give an aware one (datetime.now(timezone.utc))")
        return (t - _EPOCH) // timedelta(milliseconds=1)  # exact, unlike timestamp()
    if isinstance(t, (int, float)):
        return duration_ms(what, t)
    raise InvalidError(f"invalid {what} {t!r}: a {type(t).__name__}, want a datetime or unix seconds")


@dataclass
class Task:
    """A task to enqueue: its type, its payload and its options.

    ``payload`` is bytes, sent as they are (a *raw* payload, which Go's typed
    handlers read as JSON), or any other object, encoded with msgpack. Give
    ``raw=False`` with bytes that already are one msgpack value. None (the
    default) is no payload: zero bytes, marked msgpack.

    Options (all optional; durations are timedeltas or seconds, moments are
    aware datetimes or unix seconds):

    - ``queue``: the queue's name, ``default`` when None.
    - ``group``: the task's group (a tenant): its partition, and its turns in fair queues.
    - ``max_retry``: retries after the first attempt, 25 by default; 0 runs once.
    - ``timeout``: how long each attempt may run.
    - ``deadline``: the moment after which no attempt runs on.
    - ``retention``: how long the task and its result are kept once it succeeded.
    - ``unique``: a ttl: refuse another task of the same type and payload
      (or ``unique_by``) in its partition while the lock is held.
    - ``unique_by``: the caller's uniqueness ID (needs ``unique`` or
      ``unique_until_finished``).
    - ``unique_until_finished``: hold the lock as long as the task lives, then
      ``unique_after`` more (0: released when it finishes).
    - ``process_in`` / ``process_at``: a delay (timed by the Redis server's
      clock) or a due moment (by this machine's); not both.
    - ``task_id``: the caller's ID, claimed per queue; a duplicate raises
      :class:`~shardq.errors.DuplicateTaskIDError` carrying the original's info.
    - ``headers``: small string headers; ``traceparent`` and ``tracestate``
      set the W3C trace context headers.
    """

    type: str
    payload: Any = None
    raw: Optional[bool] = None
    queue: Optional[str] = None
    group: Optional[str] = None
    max_retry: Optional[int] = None
    timeout: Optional[Duration] = None
    deadline: Optional[Moment] = None
    retention: Optional[Duration] = None
    unique: Optional[Duration] = None
    unique_by: Optional[str] = None
    unique_until_finished: bool = False
    unique_after: Duration = 0
    process_in: Optional[Duration] = None
    process_at: Optional[Moment] = None
    task_id: Optional[str] = None
    headers: Mapping[str, str] = field(default_factory=dict)
    traceparent: Optional[str] = None
    tracestate: Optional[str] = None

    def payload_bytes(self) -> tuple[bytes, bool]:
        """The payload's bytes and whether they are raw."""
        p = self.payload
        if p is None:
            return b"", bool(self.raw)  # no payload: empty, msgpack unless raw=True
        if isinstance(p, (bytes, bytearray, memoryview)):
            b = bytes(p)
            if self.raw is False:
                if not b:
                    return b, False
                try:
                    msgpack.unpackb(b, raw=True, strict_map_key=False)
                except Exception as e:
                    raise InvalidError(f"task {self.type!r}: raw=False, but the payload bytes are not one msgpack value: {e}") from None
                return b, False
            return b, True
        if self.raw:
            raise InvalidError(f"task {self.type!r}: raw=True needs a bytes payload, not a {type(p).__name__}")
        try:
            return msgpack.packb(p, use_bin_type=True), False
        except (TypeError, ValueError, OverflowError) as e:
            raise InvalidError(f"task {self.type!r}: the payload does not encode as msgpack: {e}") from None


def check_trace(name: str, value: str) -> str:
    """A W3C trace context header's value, checked for its shape."""
    if not isinstance(value, str) or value == "":
        raise InvalidError(f"invalid {name} {value!r}: want a non-empty str")
    if name == "traceparent" and not _TRACEPARENT.match(value):
        raise InvalidError(f"invalid traceparent {value!r}: want version-traceid-parentid-flags in lowercase hex (W3C Trace Context)")
    return value


def check_max_retry(n: object) -> int:
    """MaxRetry: an int from 0 to the largest signed 64-bit integer."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= _INT64_MAX:
        raise InvalidError(f"invalid max_retry {n!r}: want an int from 0 to {_INT64_MAX}")
    return n
