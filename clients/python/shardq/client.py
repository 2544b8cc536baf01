"""The producer: :class:`Client` enqueues tasks and reads them back."""

from __future__ import annotations

import hashlib
import struct
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import msgpack
import redis
from redis.exceptions import NoScriptError, ReadOnlyError, ResponseError

from . import scripts
from .envelope import Codec, KeyRing, Use, key_id
from .errors import (
    DuplicateTaskIDError,
    DuplicateUniqueTaskError,
    EnqueueManyError,
    EnvelopeError,
    InvalidError,
    PartitionClosedError,
    PayloadTooLargeError,
    ProtocolVersionError,
    QueueFullError,
    RedisRefusedError,
    ShardqError,
    TaskNotFoundError,
)
from .ids import IDGenerator, id_time, public_id, stored_id
from .info import Progress, TaskInfo, ms_duration, ms_time
from .names import DEFAULT_MAX_PAYLOAD_SIZE, MAX_PARTITIONS, check_headers, check_name, check_unique_by
from .routing import Layout, Routes
from .task import Duration, Task, check_max_retry, check_trace, duration_ms, moment_ms
from .wire import DEFAULT_MAX_RETRY, MalformedError, Message, decode_message, decode_progress, decode_record

#: The protocol version this client follows (docs/protocol.md).
PROTOCOL_VERSION = "1.0"
#: The queue of tasks enqueued without one.
DEFAULT_QUEUE = "default"

# What the enqueue scripts answer per task (docs/protocol.md, "The enqueue scripts").
_PENDING, _SCHEDULED, _DUP_ID, _DUP_UNIQUE, _QUEUE_FULL, _GROUP_FULL, _CLOSED, _GUESSED = 0, 1, -1, -2, -3, -4, -5, -6
_DEPTH_CACHE = 1.0  # seconds a producer trusts that a queue has no maximum
_CLOSED_TRIES = 4
_REFUSED_PATIENCE = 5.0
_REFUSED_WAIT = 0.05
_REFUSED_MAX_WAIT = 0.5
_MAX_SHARD_SIZE = 7000
_MAX_FEED_SIZE = 1_000_000_000

Arg = Union[bytes, str, int]


def _arg(a: Arg) -> bytes:
    """An argument as Redis receives it: an int as its decimal text."""
    if isinstance(a, bytes):
        return a
    if isinstance(a, bool):
        raise TypeError("bool argument")
    if isinstance(a, int):
        return str(a).encode()
    return a.encode("utf-8")


def tag(prefix: str, queue: str, partition: int) -> str:
    """The tag of a partition, ``{<prefix>:<queue>:<n>}``."""
    return "{%s:%s:%d}" % (prefix, queue, partition)


#: How recent a worker's heartbeat must be for it to count as running, in
#: ms: as the Go producer's protocol.Live.
_LIVE_MS = 60_000


def _old_workers(now: Any, beats: Any, statuses: Any) -> list[tuple[str, str, int, str]]:
    """The running workers that could not read this client's messages: ID,
    host, process ID and the protocol they follow ("" for none), sorted."""
    secs, micros = int(now[0]), int(now[1])
    since = secs * 1000 + micros // 1000 - _LIVE_MS
    ours = _parse_version(PROTOCOL_VERSION)
    out = []
    for member, score in zip(beats[::2], beats[1::2]):
        raw = statuses.get(member)
        if raw is None or float(score) < since:
            continue  # stopped, or crashed and waiting to be reaped
        try:
            st = msgpack.unpackb(raw, raw=False, strict_map_key=False)
        except Exception:  # noqa: BLE001 - not a worker's status: nothing to refuse for
            continue
        if not isinstance(st, dict):
            continue
        v = st.get("v", "")
        v = v if isinstance(v, str) else ""
        parsed = _parse_version(v) if v else None
        if parsed is None or ours is None or parsed[0] != ours[0]:
            wid = member.decode("utf-8", "replace") if isinstance(member, bytes) else str(member)
            out.append((wid, str(st.get("h", "")), int(st.get("p", 0) or 0), v))
    return sorted(out)


def _parse_version(v: str) -> Optional[tuple[int, int]]:
    major, sep, minor = v.partition(".")
    for part in (major, minor):
        if not part or len(part) > 6 or not part.isascii() or not part.isdigit():
            return None
    if not sep or int(major) < 1:
        return None
    return int(major), int(minor)


@dataclass
class _Pending:
    """A task built and ready to send."""

    index: int
    queue: str
    info: TaskInfo
    msg: bytes
    sid: bytes
    at: int = 0  # due at, unix ms; 0 = none
    in_: int = 0  # due in, ms; 0 = none
    unique: str = ""
    uttl: int = 0
    id_claim: int = 0
    route: Optional[bytes] = None
    due_ms: int = 0

    def plain(self) -> bool:
        """Pending now, a generated ID, not unique: the scripts' 2-field layout."""
        return self.at == 0 and self.in_ == 0 and self.unique == "" and self.id_claim == 0


@dataclass
class _Group:
    """The tasks of one partition: one script call."""

    queue: str
    partition: int
    tasks: list[_Pending] = field(default_factory=list)
    capped: bool = True
    max: int = 0
    key_max: int = 0


@dataclass
class _Cmd:
    """One command of a round trip; a script call falls back to EVAL."""

    args: tuple[Arg, ...]
    script: Optional[scripts.Script] = None
    keys: Sequence[str] = ()
    argv: Sequence[bytes] = ()
    use_eval: bool = False

    def wire(self) -> tuple[Arg, ...]:
        """The command's arguments as sent."""
        if self.script is None:
            return self.args
        out: list[Arg] = ["EVAL", self.script.source] if self.use_eval else ["EVALSHA", self.script.sha1]
        out.append(len(self.keys))
        out.extend(self.keys)
        out.extend(self.argv)
        return tuple(out)


class Client:
    """A shardq producer over one Redis server.

    It enqueues tasks for shardq's Go workers, writing exactly what
    docs/protocol.md says, and reads tasks back. It is safe to use from
    several threads. Build one with :meth:`from_url` or around a
    ``redis.Redis`` created with ``decode_responses=False`` (the default).

    Keyword arguments (all optional):

    - ``prefix``: the key prefix shared with the workers, ``shardq``.
    - ``partitions``: queue name -> partition count configured for it (1 when
      absent); an operator's layout in Redis wins.
    - ``compression``: ``"small"`` (zstd, the default) or ``"none"``. ``"fast"``
      (S2, the Go default) is refused: no S2 library is packaged for Debian.
    - ``compress_above``: the least payload size compressed, 512 bytes.
    - ``key_ring``: a :class:`KeyRing`: every payload is encrypted, results opened.
    - ``allow_plaintext``: with a key ring, read values that are not encrypted.
    - ``max_payload_size``: payload bound before compression, 1 MiB.
    - ``shard_size``, ``feed_size``, ``id_ttl``: as the deployment's Go
      processes use (1000, 10000, 24 hours).
    - ``full_messages``: write every message in the full form.
    - ``context_headers``: a callable returning headers to add to every task
      (a task's own headers win), e.g. an OpenTelemetry ``inject``.
    """

    def __init__(
        self,
        redis_client: "redis.Redis[bytes]",
        *,
        prefix: str = "shardq",
        partitions: Optional[Mapping[str, int]] = None,
        compression: str = "small",
        compress_above: int = 512,
        key_ring: Optional[KeyRing] = None,
        allow_plaintext: bool = False,
        max_payload_size: int = DEFAULT_MAX_PAYLOAD_SIZE,
        shard_size: int = 1000,
        feed_size: int = 10_000,
        id_ttl: Duration = timedelta(hours=24),
        full_messages: bool = False,
        context_headers: Optional[Callable[[], Mapping[str, str]]] = None,
    ) -> None:
        given: object = redis_client  # checked as any object: callers may pass anything
        if not isinstance(given, redis.Redis):
            raise InvalidError(f"invalid redis_client: a {type(given).__name__}, want a redis.Redis")
        if redis_client.connection_pool.connection_kwargs.get("decode_responses"):
            raise InvalidError("invalid redis_client: decode_responses=True; the client reads binary values, use decode_responses=False")
        kwargs = redis_client.connection_pool.connection_kwargs
        if kwargs.get("retry_on_timeout") or kwargs.get("retry_on_error"):
            # docs/protocol.md, "Refusals and lost replies": a call whose
            # reply was lost may have run, and sent again enqueues twice
            raise InvalidError("invalid redis_client: retry_on_timeout or retry_on_error is set; "
                               "an enqueue whose reply was lost must not be sent again, so leave them unset")
        self._redis = redis_client
        self._owned = False
        self.prefix = check_name("prefix", prefix)
        parts = dict(partitions or {})
        for q, n in parts.items():
            check_name("queue name in partitions", q)
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_PARTITIONS:
                raise InvalidError(f"invalid partitions[{q!r}] = {n!r}: want 1 to {MAX_PARTITIONS}")
        for what, v, hi in (("shard_size", shard_size, _MAX_SHARD_SIZE), ("feed_size", feed_size, _MAX_FEED_SIZE)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
                raise InvalidError(f"invalid {what} {v!r}: want 1 to {hi}")
        if isinstance(max_payload_size, bool) or not isinstance(max_payload_size, int) or max_payload_size < 1:
            raise InvalidError(f"invalid max_payload_size {max_payload_size!r}: want an int > 0")
        self._id_ttl_ms = duration_ms("id_ttl", id_ttl)
        if self._id_ttl_ms < 1:
            raise InvalidError(f"invalid id_ttl {id_ttl!r}: want at least 1 ms")
        self._codec = Codec(compression, compress_above, key_ring, allow_plaintext)
        self._max_payload = max_payload_size
        self._shard_size, self._feed_size = shard_size, feed_size
        self._full = bool(full_messages)
        self._context_headers = context_headers
        self._partitions = parts
        self._routes = Routes(parts)
        self._ids = IDGenerator()
        self._new_id: Callable[[int], bytes] = self._ids.new
        self._lock = threading.Lock()
        self._claimed = False
        self._depth: dict[str, tuple[int, int, float]] = {}
        self._tails: dict[str, int] = {}

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> "Client":
        """A client over a new ``redis.Redis`` of ``url``
        (``redis://host:port/db``), closed by :meth:`close`."""
        c = cls(redis.Redis.from_url(url), **kwargs)
        c._owned = True
        return c

    def close(self) -> None:
        """Close the Redis connections, when the client made them."""
        if self._owned:
            self._redis.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client(prefix={self.prefix!r}, compression={self._codec.compression!r}, key_ring={self._codec.key_ring!r})"

    @property
    def redis(self) -> "redis.Redis[bytes]":
        """The underlying redis-py client."""
        return self._redis

    # ---- enqueue -----------------------------------------------------

    def enqueue(self, type: str, payload: Any = None, **options: Any) -> TaskInfo:
        """Enqueue one task and return its info (state ``pending``, or
        ``scheduled`` when delayed).

        ``payload`` is bytes (sent as they are, a raw payload) or an object
        (msgpack-encoded). ``options`` are :class:`Task`'s. Raises
        :class:`InvalidError` before anything is written for a bad argument,
        :class:`DuplicateTaskIDError` (with the original's ``info``) for a
        claimed ``task_id``, :class:`DuplicateUniqueTaskError`,
        :class:`QueueFullError`, :class:`PartitionClosedError`, or a
        ``redis`` exception when the outcome is unknown.
        """
        try:
            task = Task(type, payload, **options)
        except TypeError as e:
            raise InvalidError(f"invalid option: {e}") from None
        result = self._enqueue([task], single=True)[0]
        if isinstance(result, BaseException):
            raise result
        assert isinstance(result, TaskInfo)
        return result

    def enqueue_many(
        self, tasks: Iterable[Task], *, return_exceptions: bool = False
    ) -> list[Any]:
        """Enqueue several tasks in one round trip (one script call per
        partition, pipelined) and return their infos in order.

        Every task is validated first: a bad one raises
        :class:`InvalidError`, naming its index, before anything is written.
        When some tasks fail in Redis the others are still enqueued, and
        :class:`EnqueueManyError` is raised with every task's result; with
        ``return_exceptions=True`` the list holds each failed task's
        exception in its place instead.
        """
        batch = list(tasks)
        for i, t in enumerate(batch):
            if not isinstance(t, Task):
                raise InvalidError(f"task {i}: a {type(t).__name__}, want a shardq.Task")
        if not batch:
            return []
        results = self._enqueue(batch, single=False)
        if not return_exceptions and any(isinstance(r, BaseException) for r in results):
            raise EnqueueManyError(results)
        return results

    def _now_ms(self) -> int:
        return int(time.time() * 1000)

    def _enqueue(self, tasks: list[Task], single: bool) -> list[Any]:
        now = self._now_ms()
        extra = self._extra_headers()
        built = []
        for i, t in enumerate(tasks):
            try:
                built.append(self._build(t, now, extra, i))
            except InvalidError as e:
                if single:
                    raise
                raise type(e)(f"task {i}: {e}") from None
        self._claim_protocol()
        self._read_first({p.queue for p in built})
        results: list[Any] = [None] * len(built)
        groups = self._route(built)
        self._send(groups, results, single)
        for attempt in range(1, _CLOSED_TRIES + 1):
            closed = [p for g in groups for p in g.tasks if isinstance(results[p.index], PartitionClosedError)]
            if not closed:
                break
            if attempt > 1:
                time.sleep(attempt * _REFUSED_WAIT)
            self._read_layouts(sorted({p.queue for p in closed}))
            for p in closed:
                results[p.index] = None
            groups = self._route(closed)
            self._send(groups, results, False)
        self._fill_duplicates(built, results)
        return results

    def _extra_headers(self) -> dict[str, str]:
        if self._context_headers is None:
            return {}
        return {k: v for k, v in (self._context_headers() or {}).items() if k and v}

    def _build(self, t: Task, now_ms: int, extra: Mapping[str, str], index: int) -> _Pending:
        """Validate a task and encode its message."""
        typ = check_name("task type", t.type)
        queue = check_name("queue name", t.queue) if t.queue is not None else DEFAULT_QUEUE
        payload, raw = t.payload_bytes()
        if len(payload) > self._max_payload:
            raise PayloadTooLargeError(f"task {typ!r}: payload of {len(payload)} bytes, limit {self._max_payload}")
        m = Message(id=b"", type=typ, raw=raw, enqueued_at=now_ms)
        if t.group is not None:
            m.group = check_name("group", t.group)
        if t.max_retry is not None:
            m.max_retry = check_max_retry(t.max_retry)
        if t.timeout is not None:
            m.timeout = duration_ms("timeout", t.timeout)
            if m.timeout < 1:
                raise InvalidError(f"invalid timeout {t.timeout!r}: want at least 1 ms")
        if t.deadline is not None:
            m.deadline = moment_ms("deadline", t.deadline)
            if m.deadline == 0:
                raise InvalidError(f"invalid deadline {t.deadline!r}: the zero time")
        if t.retention is not None:
            m.retention = duration_ms("retention", t.retention)
            if m.retention < 0:
                raise InvalidError(f"invalid retention {t.retention!r}: want >= 0")
        headers = dict(extra)
        if not isinstance(t.headers, Mapping):
            raise InvalidError(f"invalid headers {t.headers!r}: want a mapping of str to str")
        headers.update(t.headers)
        if t.traceparent is not None:
            headers["traceparent"] = check_trace("traceparent", t.traceparent)
        if t.tracestate is not None:
            headers["tracestate"] = check_trace("tracestate", t.tracestate)
        m.headers = check_headers(headers)
        p = _Pending(index=index, queue=queue, info=None, msg=b"", sid=b"")  # type: ignore[arg-type]
        if t.task_id is not None:
            m.id = stored_id(check_name("task ID", t.task_id))
            p.id_claim = self._id_ttl_ms
        else:
            m.id = self._new_id(now_ms)
            m.enqueued_at = id_time(m.id) or now_ms
        if t.unique is not None or t.unique_until_finished:
            ttl = 0
            if t.unique is not None:
                ttl = duration_ms("unique", t.unique)
                if ttl < 1:
                    raise InvalidError(f"invalid unique {t.unique!r}: want a ttl of at least 1 ms")
            m.unique = check_unique_by(t.unique_by) if t.unique_by is not None else \
                typ + ":" + hashlib.sha1(payload).hexdigest()
            p.unique, p.uttl = m.unique, ttl
            if t.unique_until_finished:
                after = duration_ms("unique_after", t.unique_after)
                if after < 0:
                    raise InvalidError(f"invalid unique_after {t.unique_after!r}: want >= 0")
                p.uttl = -after - 1
        elif t.unique_by is not None:
            raise InvalidError(f"invalid unique_by {t.unique_by!r}: give unique (a ttl) or unique_until_finished with it")
        if t.process_in is not None and t.process_at is not None:
            raise InvalidError("give process_in or process_at, not both")
        if t.process_at is not None:
            p.at = p.due_ms = moment_ms("process_at", t.process_at)
        if t.process_in is not None:
            p.in_ = duration_ms("process_in", t.process_in)
            if p.in_ < 0:
                raise InvalidError(f"invalid process_in {t.process_in!r}: want >= 0")
            p.due_ms = now_ms + p.in_
        if m.group:
            p.route = m.group.encode("utf-8")
        elif m.unique:
            p.route = m.unique.encode("utf-8")
        elif p.id_claim:
            p.route = m.id
        m.payload = self._codec.wrap(payload, m.id, Use.PAYLOAD)
        p.sid, p.msg = m.id, m.encode(self._full)
        p.info = TaskInfo(
            id=public_id(m.id), queue=queue, partition=0, type=typ, raw=raw, max_retry=m.max_retry,
            timeout=ms_duration(m.timeout), deadline=ms_time(m.deadline), retention=ms_duration(m.retention),
            unique_by=m.unique, group=m.group, headers=dict(m.headers), enqueued_at=ms_time(m.enqueued_at),
            encrypted_with=key_id(m.payload), _payload=payload,
        )
        return p

    def _route(self, tasks: Sequence[_Pending]) -> list[_Group]:
        """Pick each task's partition and group the tasks by partition."""
        groups: dict[tuple[str, int], _Group] = {}
        for p in tasks:
            part = self._routes.pick(p.queue, p.route)
            p.info.partition = part
            g = groups.get((p.queue, part))
            if g is None:
                g = groups[(p.queue, part)] = _Group(p.queue, part)
            g.tasks.append(p)
        return list(groups.values())

    def _capped(self, queue: str) -> bool:
        """Whether the queue's enqueue must go by enqueue_capped."""
        entry = self._depth.get(queue)
        return entry is None or entry[0] > 0 or entry[1] > 0 or time.monotonic() - entry[2] >= _DEPTH_CACHE

    def _enqueue_call(self, g: _Group, capped: bool) -> tuple[scripts.Script, list[str], list[bytes]]:
        """The script, KEYS and ARGV that enqueue g's tasks."""
        t = tag(self.prefix, g.queue, g.partition)
        keys = [t + s for s in (":first", ":last", ":feed", ":feed:rank", ":feed:msg", ":scheduled", ":msg", ":state", ":guard")]
        plain = all(p.plain() for p in g.tasks)
        argv: list[Arg] = [t, "", self._shard_size, self._feed_size, 2 if plain else 7]
        for p in g.tasks:
            argv += [p.msg, p.sid] if plain else [p.msg, p.sid, p.at, p.in_, p.unique, p.uttl, p.id_claim]
        if not capped:
            return scripts.ENQUEUE, keys, [_arg(a) for a in argv]
        head: list[Arg] = [g.partition, self._routes.count(g.queue)]
        return scripts.ENQUEUE_CAPPED, keys, [_arg(a) for a in head + argv]

    def _one_call(self, g: _Group, guess: Optional[int]) -> tuple[scripts.Script, list[str], list[bytes]]:
        """The enqueue_one call of g's one plain task, guessing the tail shard."""
        t = tag(self.prefix, g.queue, g.partition)
        shard = f"{t}:s:{guess if guess is not None else -1}"
        keys = [t + ":feed", t + ":feed:rank", t + ":guard", shard]
        return scripts.ENQUEUE_ONE, keys, [struct.pack(">II", self._shard_size, self._feed_size), g.tasks[0].msg]

    def _send(self, groups: list[_Group], results: list[Any], single: bool) -> None:
        """Send every group's call in one round trip and read the replies."""
        for g in groups:
            g.capped = self._capped(g.queue)
        if single and len(groups) == 1:
            g = groups[0]
            if len(g.tasks) == 1 and g.tasks[0].plain() and not g.capped and self._routes.known(g.queue):
                self._send_one(g, results)
                return
        queues = list(dict.fromkeys(g.queue for g in groups))
        cmds: list[_Cmd] = []
        fresh = {q: self._routes.count(q) for q in queues if not self._routes.registered(q)}
        for q, n in fresh.items():
            cmds.append(_Cmd(("HSET", f"{self.prefix}:queues", q, n)))
        stale = [q for q in queues if self._routes.stale(q)]
        if stale:
            cmds.append(_Cmd(("HMGET", f"{self.prefix}:layout", *stale)))
        first = len(cmds)
        for g in groups:
            s, keys, argv = self._enqueue_call(g, g.capped)
            cmds.append(_Cmd((), s, keys, argv))
        replies = self._round_trip(cmds)
        if fresh and not any(isinstance(r, BaseException) for r in replies[: len(fresh)]):
            self._routes.remember(fresh)
        if stale and not isinstance(replies[first - 1], BaseException):
            self._routes.store(stale, list(replies[first - 1]))
        for g, reply in zip(groups, replies[first:]):
            self._collect(g, reply, results)

    def _send_one(self, g: _Group, results: list[Any]) -> None:
        """Send a single plain task by enqueue_one, the tail shard guessed."""
        name = tag(self.prefix, g.queue, g.partition)
        guess = self._tails.get(name)
        s, keys, argv = self._one_call(g, guess)
        reply = self._round_trip([_Cmd((), s, keys, argv)])[0]
        p = g.tasks[0]
        if isinstance(reply, BaseException):
            results[p.index] = ShardqError(f"enqueue to queue {g.queue!r}: redis: {reply}")
            return
        if reply == _CLOSED:
            results[p.index] = PartitionClosedError(f"partition {g.partition} of queue {g.queue!r} is closed")
            return
        if not isinstance(reply, int) or reply < _GUESSED:
            results[p.index] = ShardqError(f"enqueue to queue {g.queue!r}: unexpected reply {reply!r}")
            return
        with self._lock:
            if reply >= 0:
                tail, used = reply >> 1, reply & 1 == 1
                cur = self._tails.get(name)
                # replies of concurrent calls come in any order: a used
                # guess only moves forward; a read of T:last wins unless
                # another reply moved the guess since
                if (used and (cur is None or tail > cur)) or (not used and cur == guess):
                    self._tails[name] = tail
        results[p.index] = p.info

    def _collect(self, g: _Group, reply: Any, results: list[Any]) -> None:
        """Read an enqueue script's reply into results."""
        if isinstance(reply, BaseException):
            err = ShardqError(f"enqueue to queue {g.queue!r} (partition {g.partition}): redis: {reply}")
            for p in g.tasks:
                results[p.index] = err
            return
        codes = list(reply) if isinstance(reply, list) else []
        n = len(g.tasks)
        if len(codes) != n + (2 if g.capped else 0) or not all(isinstance(c, int) for c in codes):
            err = ShardqError(f"enqueue to queue {g.queue!r}: unexpected reply {reply!r} for {n} tasks")
            for p in g.tasks:
                results[p.index] = err
            return
        if g.capped:
            g.max, g.key_max = codes[n], codes[n + 1]
            with self._lock:
                self._depth[g.queue] = (g.max, g.key_max, time.monotonic())
        for p, code in zip(g.tasks, codes):
            q = g.queue
            if code == _PENDING:
                results[p.index] = p.info
            elif code == _SCHEDULED:
                p.info.state, p.info.next_process_at = "scheduled", ms_time(p.due_ms)
                results[p.index] = p.info
            elif code == _DUP_ID:
                results[p.index] = DuplicateTaskIDError(f"duplicate task ID {p.info.id!r} in queue {q!r}", p.info.id, q, None)
            elif code == _DUP_UNIQUE:
                results[p.index] = DuplicateUniqueTaskError(f"duplicate unique task: uniqueness ID {p.unique!r} in queue {q!r}", p.unique, q)
            elif code == _QUEUE_FULL:
                results[p.index] = QueueFullError(f"queue {q!r} is full: MaxDepth {g.max} (partition {g.partition} holds its share)")
            elif code == _GROUP_FULL:
                results[p.index] = QueueFullError(f"group {p.info.group!r} of queue {q!r} is full: GroupMaxDepth {g.key_max} (in partition {g.partition})")
            elif code == _CLOSED:
                results[p.index] = PartitionClosedError(f"partition {g.partition} of queue {q!r} is closed")
            else:
                results[p.index] = ShardqError(f"enqueue to queue {q!r}: unexpected code {code}")

    def _fill_duplicates(self, built: list[_Pending], results: list[Any]) -> None:
        """Give each duplicate-ID error the original task's info, read in
        one round trip for all of them."""
        dups = [p for p in built if isinstance(results[p.index], DuplicateTaskIDError)]
        if not dups:
            return
        cmds = []
        for p in dups:
            keys = self._get_task_keys(p.queue, p.info.partition)
            cmds.append(_Cmd((), scripts.GET_TASK, keys, [p.sid]))
        try:
            replies = self._round_trip(cmds)
        except redis.RedisError:
            return  # the error still says duplicate; its info stays None
        for p, reply in zip(dups, replies):
            err = results[p.index]
            if isinstance(reply, BaseException):
                continue
            try:
                info = self._task_from_reply(p.queue, p.info.partition, p.info.id, reply)
            except ShardqError:
                continue
            err.info = info or TaskInfo(id=p.info.id, queue=p.queue, partition=p.info.partition, type="")

    # ---- round trips ---------------------------------------------------

    def _round_trip(self, cmds: list[_Cmd]) -> list[Any]:
        """Run cmds in one pipeline (one round trip); resend as EVAL the
        script calls answered NOSCRIPT, and, for up to 5 s, the calls Redis
        refused unrun. An error reply comes back in its command's place."""
        replies: list[Any] = [None] * len(cmds)
        todo = list(range(len(cmds)))
        give_up = time.monotonic() + _REFUSED_PATIENCE
        attempt = 0
        while todo:
            pipe: Any = self._redis.pipeline(transaction=False)  # redis-py stubs leave execute_command untyped
            for i in todo:
                pipe.execute_command(*cmds[i].wire())
            out = pipe.execute(raise_on_error=False)
            again, refused = [], []
            for i, r in zip(todo, out):
                c = cmds[i]
                if isinstance(r, NoScriptError) and c.script is not None and not c.use_eval:
                    c.use_eval = True
                    again.append(i)
                elif isinstance(r, ReadOnlyError) or (isinstance(r, ResponseError) and str(r).startswith(scripts.REFUSED_PREFIXES)):
                    refused.append(i)
                else:
                    replies[i] = r
            if refused:
                attempt += 1
                if time.monotonic() >= give_up:
                    for i in refused:
                        replies[i] = RedisRefusedError(f"redis refused the call for {_REFUSED_PATIENCE:.0f} s: {out[todo.index(i)]}")
                    refused = []
                else:
                    time.sleep(min(attempt * _REFUSED_WAIT, _REFUSED_MAX_WAIT))
            todo = sorted(again + refused)
        return replies

    def _claim_protocol(self) -> None:
        """Before the first write: ``SET <prefix>:protocol 1.0 NX GET``, and
        refuse another major or a value that does not parse; in the same
        round trip, read the workers' heartbeats and statuses, and refuse
        while a running worker follows no version (shardq 0.1.0) or another
        major: it would send what this client writes to dead."""
        if self._claimed:
            return
        key = f"{self.prefix}:protocol"
        pipe: Any = self._redis.pipeline(transaction=False)  # redis-py stubs leave execute_command untyped
        # get=True: redis-py then hands back the reply, not a bool
        pipe.execute_command("SET", key, PROTOCOL_VERSION, "NX", "GET", get=True)
        pipe.execute_command("TIME")
        pipe.execute_command("ZRANGE", f"{self.prefix}:workers", 0, -1, "WITHSCORES")
        pipe.execute_command("HGETALL", f"{self.prefix}:workers:status")
        stored, now, beats, statuses = pipe.execute()
        if stored is not None:
            text = stored.decode("utf-8", "replace") if isinstance(stored, bytes) else str(stored)
            version = _parse_version(text)
            if version is None:
                raise ProtocolVersionError(
                    f"protocol version: key {key!r} holds {text!r}, which does not parse as <major>.<minor>; "
                    f"this client follows {PROTOCOL_VERSION} and writes nothing", key, text, PROTOCOL_VERSION)
            if version[0] != _parse_version(PROTOCOL_VERSION)[0]:  # type: ignore[index]
                raise ProtocolVersionError(
                    f"protocol version: key {key!r} holds {text}, another major than this client's {PROTOCOL_VERSION}; "
                    "it writes nothing", key, text, PROTOCOL_VERSION)
        old = _old_workers(now, beats, statuses)
        if old:
            wid, host, pid, wv = old[0]
            named = f"protocol {wv}" if wv else "no protocol version (shardq 0.1.0)"
            more = f" and {len(old) - 1} more" if len(old) > 1 else ""
            raise ProtocolVersionError(
                f"protocol version: this client writes protocol {PROTOCOL_VERSION}, which running workers cannot read: "
                f"worker {wid} ({host}, pid {pid}) follows {named}{more}; upgrade the workers first",
                key, wv, PROTOCOL_VERSION)
        self._claimed = True

    def _read_first(self, queues: Iterable[str]) -> None:
        """Read, in a round trip of its own, the layouts that routing would
        otherwise guess (quirk 13)."""
        unread = sorted(q for q in queues if self._routes.guessing(q))
        if unread:
            self._read_layouts(unread)

    def _read_layouts(self, queues: list[str]) -> None:
        values = self._redis.execute_command("HMGET", f"{self.prefix}:layout", *queues)
        self._routes.store(queues, list(values))

    # ---- reading a task back -----------------------------------------

    def _get_task_keys(self, queue: str, partition: int) -> list[str]:
        t = tag(self.prefix, queue, partition)
        return [t + s for s in (":msg", ":state", ":feed:msg", ":feed", ":progress", ":result", ":cancel", ":steps")]

    def partitions(self, queue: str) -> int:
        """How many partitions of ``queue`` hold tasks: the layout's serve
        count, else the larger of the registry's and the configured count.
        Raises :class:`TaskNotFoundError` for a queue the registry lacks."""
        check_name("queue name", queue)
        pipe: Any = self._redis.pipeline(transaction=False)  # redis-py stubs leave execute_command untyped
        pipe.execute_command("HGET", f"{self.prefix}:queues", queue)
        pipe.execute_command("HGET", f"{self.prefix}:layout", queue)
        count, lay = pipe.execute()
        if count is None:
            raise TaskNotFoundError(f"no such queue {queue!r} in the registry {self.prefix}:queues")
        if lay is not None:
            layout = Layout.parse(lay.decode("utf-8", "replace"))
            if layout is not None:
                return layout.serve
        text = count.decode("utf-8", "replace")
        n = int(text) if text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_PARTITIONS else 0
        return max(n, self._partitions.get(queue, 1))

    def get_task(self, queue: str, task_id: str) -> TaskInfo:
        """Read the task ``task_id`` of ``queue``: its message, its record
        (state, attempts, times, last error), its progress and its result,
        looking in every partition in one round trip (get_task.lua). Raises
        :class:`TaskNotFoundError` when no partition holds it."""
        check_name("task ID", task_id)
        n = self.partitions(queue)
        sid = stored_id(task_id)
        cmds = [_Cmd((), scripts.GET_TASK, self._get_task_keys(queue, part), [sid]) for part in range(n)]
        for part, reply in enumerate(self._round_trip(cmds)):
            if isinstance(reply, BaseException):
                raise ShardqError(f"get task {task_id!r} in queue {queue!r}: redis: {reply}")
            info = self._task_from_reply(queue, part, task_id, reply)
            if info is not None:
                return info
        raise TaskNotFoundError(f"task {task_id!r} not found in queue {queue!r}")

    def _open(self, value: bytes, sid: bytes, use: Use) -> bytes:
        return self._codec.open(value, sid, use, self._max_payload)

    def _task_from_reply(self, queue: str, part: int, task_id: str, reply: Any) -> Optional[TaskInfo]:
        """A TaskInfo of get_task.lua's reply; None when the partition does
        not hold the task."""
        if not isinstance(reply, list) or len(reply) < 3:
            raise ShardqError(f"get task {task_id!r}: unexpected reply {reply!r}")
        msg = reply[0]
        if msg is None:
            return None
        sid = stored_id(task_id)
        problems = []
        try:
            m = decode_message(bytes(msg))
            malformed = False
        except MalformedError as e:
            m = Message(id=sid, type="", payload=bytes(msg), raw=True, max_retry=0)
            malformed = True
            problems.append(f"message: {e}")
        info = TaskInfo(
            id=public_id(m.id), queue=queue, partition=part, type=m.type, raw=m.raw, max_retry=m.max_retry,
            timeout=ms_duration(m.timeout), deadline=ms_time(m.deadline), retention=ms_duration(m.retention),
            unique_by=m.unique, group=m.group, headers=m.headers, enqueued_at=ms_time(m.enqueued_at),
            malformed=malformed, _payload=m.payload,
        )
        rec = reply[1]
        if rec:
            try:
                r = decode_record(bytes(rec))
            except MalformedError as e:
                problems.append(str(e))
            else:
                info.state = "succeeded" if r.state == "done" else r.state
                info.attempts, info.worker = r.attempts, r.worker
                info.next_process_at, info.started_at = ms_time(r.next_at), ms_time(r.started_at)
                info.finished_at, info.last_failed_at = ms_time(r.finished_at), ms_time(r.last_failed_at)
                try:
                    info.last_error = self._open(r.last_error, sid, Use.ERROR).decode("utf-8", "replace")
                except EnvelopeError as e:
                    info.last_error = f"(the error does not open: {e})"
        if isinstance(reply[2], int) and reply[2] > 0:
            info.rank = reply[2]
        if len(reply) >= 5:
            if isinstance(reply[3], bytes):
                pr = decode_progress(reply[3])
                if pr is not None:
                    text = pr.get("m") or b""
                    try:
                        opened = self._open(text if isinstance(text, bytes) else b"", sid, Use.PROGRESS)
                        message = opened.decode("utf-8", "replace")
                    except EnvelopeError as e:
                        message = f"(does not open: {e})"
                    at = pr.get("t")
                    info.progress = Progress(int(pr.get("p") or 0), message, ms_time(at if isinstance(at, int) else 0))
            if isinstance(reply[4], bytes):
                info.has_result = True
                try:
                    info._result = self._open(reply[4], sid, Use.RESULT)
                except EnvelopeError as e:
                    info._result_error = e
        if len(reply) >= 6:
            info.cancel_requested = reply[5] == 1
        if not malformed:
            info.encrypted_with = key_id(m.payload)
            try:
                info._payload = self._open(m.payload, sid, Use.PAYLOAD)
            except EnvelopeError as e:
                info._payload_error = e
        if problems:
            info.last_error = "; ".join(([info.last_error] if info.last_error else []) + problems)
        return info


__all__ = ["Client", "DEFAULT_QUEUE", "PROTOCOL_VERSION", "DEFAULT_MAX_RETRY"]
