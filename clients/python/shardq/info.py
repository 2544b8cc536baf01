"""What the client returns of a task: :class:`TaskInfo`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import msgpack

from .errors import EnvelopeError


def ms_time(ms: int) -> Optional[datetime]:
    """A unix millisecond as an aware UTC datetime; 0 is None."""
    if not ms:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def ms_duration(ms: int) -> Optional[timedelta]:
    """Milliseconds as a timedelta; 0 is None."""
    return timedelta(milliseconds=ms) if ms else None


@dataclass
class Progress:
    """A running task's progress, as its handler last reported it."""

    percent: int
    message: str
    at: Optional[datetime]


@dataclass
class TaskInfo:
    """A task: what was enqueued and, where known, its state.

    Returned by :meth:`~shardq.Client.enqueue` (state ``pending`` or
    ``scheduled``) and read back by :meth:`~shardq.Client.get_task`. Times
    are aware UTC datetimes, durations timedeltas; None means none.

    :attr:`payload` and :attr:`result` are the opened values. When a stored
    value does not open (compressed with S2, which this client cannot read,
    or encrypted with a key the ring lacks), reading the attribute raises
    the reason, an :class:`~shardq.errors.EnvelopeError` naming the codec or
    the key ID; the other fields stay readable.
    """

    id: str
    queue: str
    partition: int
    type: str
    raw: bool = False
    state: str = "pending"
    max_retry: int = 25
    attempts: int = 0
    timeout: Optional[timedelta] = None
    deadline: Optional[datetime] = None
    retention: Optional[timedelta] = None
    unique_by: str = ""
    group: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    enqueued_at: Optional[datetime] = None
    next_process_at: Optional[datetime] = None
    started_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    last_failed_at: Optional[datetime] = None
    last_error: str = ""
    worker: str = ""
    progress: Optional[Progress] = None
    cancel_requested: bool = False
    #: the task's rank in the feed it was read from; 0 when it left it
    rank: int = 0
    #: the ID of the key the payload is encrypted with; "" when it is not
    encrypted_with: str = ""
    #: the stored message does not decode: payload holds its bytes
    malformed: bool = False
    has_result: bool = False
    _payload: Optional[bytes] = field(default=None, repr=False)
    _payload_error: Optional[EnvelopeError] = field(default=None, repr=False)
    _result: Optional[bytes] = field(default=None, repr=False)
    _result_error: Optional[EnvelopeError] = field(default=None, repr=False)

    @property
    def payload(self) -> bytes:
        """The payload's bytes: msgpack unless :attr:`raw`. Raises the
        :class:`~shardq.errors.EnvelopeError` that kept it from opening."""
        if self._payload_error is not None:
            raise self._payload_error
        return self._payload or b""

    @property
    def result(self) -> Optional[bytes]:
        """The result its handler set, opened; None when it has none. Raises
        the :class:`~shardq.errors.EnvelopeError` that kept it from opening."""
        if self._result_error is not None:
            raise self._result_error
        return self._result if self.has_result else None

    def decode(self) -> Any:
        """The payload decoded: msgpack, or JSON for a raw payload."""
        if self.raw:
            return json.loads(self.payload)
        return msgpack.unpackb(self.payload, raw=False)
