"""shardq: a Python producer client of shardq, the Go task queue on Redis.

It enqueues tasks that shardq's Go workers run, writing exactly what
docs/protocol.md (the normative wire spec) says, and reads tasks and their
results back::

    import shardq

    with shardq.Client.from_url("redis://127.0.0.1:6379/0") as client:
        info = client.enqueue("email:send", {"to": "a@b.com"}, queue="mail")
        print(info.id)
"""

from .client import DEFAULT_QUEUE, PROTOCOL_VERSION, Client
from .envelope import KeyRing
from .errors import (
    CorruptEnvelopeError,
    DuplicateTaskIDError,
    DuplicateUniqueTaskError,
    EnqueueManyError,
    EnvelopeError,
    InvalidError,
    InvalidKeyRingError,
    PartitionClosedError,
    PayloadTooLargeError,
    PlaintextError,
    ProtocolVersionError,
    QueueFullError,
    RedisRefusedError,
    ShardqError,
    TaskNotFoundError,
    UnknownKeyError,
    UnsupportedCodecError,
    ValueTooLargeError,
)
from .info import Progress, TaskInfo
from .task import Task

__version__ = "0.2.0"

__all__ = [
    "Client",
    "CorruptEnvelopeError",
    "DEFAULT_QUEUE",
    "DuplicateTaskIDError",
    "DuplicateUniqueTaskError",
    "EnqueueManyError",
    "EnvelopeError",
    "InvalidError",
    "InvalidKeyRingError",
    "KeyRing",
    "PROTOCOL_VERSION",
    "PartitionClosedError",
    "PayloadTooLargeError",
    "PlaintextError",
    "Progress",
    "ProtocolVersionError",
    "QueueFullError",
    "RedisRefusedError",
    "ShardqError",
    "Task",
    "TaskInfo",
    "TaskNotFoundError",
    "UnknownKeyError",
    "UnsupportedCodecError",
    "ValueTooLargeError",
]
