"""The exceptions of the shardq client.

Every exception derives from :class:`ShardqError`. Each message says what was
wrong and with which value; no message quotes a key of a key ring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .info import TaskInfo


class ShardqError(Exception):
    """The base of every error this package raises."""


class InvalidError(ShardqError, ValueError):
    """An argument refused before anything is written: a bad name, option,
    payload, header or configuration value. Fix the call; retrying does not help."""


class PayloadTooLargeError(InvalidError):
    """A payload over the client's ``max_payload_size``, before compression."""


class ProtocolVersionError(ShardqError):
    """The prefix's data follows another major protocol version, or its
    stored version does not parse: the client refuses to write
    (docs/protocol.md, "Protocol version")."""

    def __init__(self, message: str, key: str, stored: str, ours: str) -> None:
        super().__init__(message)
        #: the Redis key holding the version, ``<prefix>:protocol``
        self.key = key
        #: the version stored there, as read
        self.stored = stored
        #: the version this client follows
        self.ours = ours


class DuplicateTaskIDError(ShardqError):
    """A caller's task ID that is already claimed in its queue.

    :attr:`info` is the *original* task's info (what its partition holds of
    it), so a retried request gets the first one's task back, as Go's
    ``ErrDuplicateTaskID`` does. It is ``None`` only when reading the
    original failed; it holds the ID, queue and partition alone when the
    partition no longer holds the task (finished and not kept).
    """

    def __init__(self, message: str, task_id: str, queue: str, info: Optional["TaskInfo"]) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.queue = queue
        self.info = info


class DuplicateUniqueTaskError(ShardqError):
    """A unique task whose uniqueness lock another task holds."""

    def __init__(self, message: str, unique_id: str, queue: str) -> None:
        super().__init__(message)
        self.unique_id = unique_id
        self.queue = queue


class QueueFullError(ShardqError):
    """A task refused because its queue is at ``MaxDepth`` or its group at
    ``GroupMaxDepth``. Nothing of it was written; it may be sent again later."""


class PartitionClosedError(ShardqError):
    """A task that found every partition it was routed to closed while an
    operator lowered the queue's partition count. Nothing of it was written."""


class TaskNotFoundError(ShardqError, LookupError):
    """A queue or task that Redis does not hold."""


class EnvelopeError(ShardqError):
    """A stored value (payload, result) that does not open."""


class CorruptEnvelopeError(EnvelopeError):
    """A wrapped value cut short, tampered with, or of unknown flags."""


class UnsupportedCodecError(EnvelopeError):
    """A value compressed with a codec this client cannot read or write:
    S2 (the Go producer's default ``fast``), alone or against a dictionary.
    The message names the codec and its flags byte."""


class UnknownKeyError(EnvelopeError):
    """A value encrypted with a key the client's key ring lacks, or read
    without a key ring. The message names the key's ID, never a key."""


class PlaintextError(EnvelopeError):
    """A value that is not encrypted, read by a client with a key ring that
    does not ``allow_plaintext``."""


class ValueTooLargeError(EnvelopeError):
    """A value that would decompress past the client's size limit."""


class InvalidKeyRingError(InvalidError):
    """A key ring that cannot be used: no current key, a key that is not 32
    bytes, a key ID out of bounds, or a JSON document of the wrong shape."""


class EnqueueManyError(ShardqError):
    """Some tasks of an :meth:`~shardq.Client.enqueue_many` call failed; the
    others were enqueued.

    :attr:`results` has one entry per task, in order: its
    :class:`~shardq.TaskInfo` when it was enqueued, else its exception (a
    :class:`DuplicateTaskIDError` carries the original task's info).
    """

    def __init__(self, results: Sequence[object]) -> None:
        self.results = list(results)
        self.errors = [r if isinstance(r, BaseException) else None for r in self.results]
        failed = [e for e in self.errors if e is not None]
        first = failed[0] if failed else None
        super().__init__(f"{len(failed)} of {len(self.results)} tasks failed; the first: {first}")


class RedisRefusedError(ShardqError):
    """Redis refused a call without running it (TRYAGAIN, CLUSTERDOWN,
    READONLY, LOADING, MASTERDOWN) for longer than the client retries."""
