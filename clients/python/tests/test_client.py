"""The client against a private redis-server: what it writes, and what it
reads back."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import msgpack
import pytest
import redis

import shardq
from shardq import KeyRing, Task
from shardq.envelope import Codec, Use
from shardq.ids import stored_id

KEY = bytes(range(32))
RING = KeyRing("k1", {"k1": KEY})


class CountingConnection(redis.Connection):
    """Counts the round trips: a pipeline is sent in one write."""

    sends = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        type(self).sends += 1
        super().send_packed_command(command, check_health)


def counting_client(port: int) -> "redis.Redis[bytes]":
    pool = redis.ConnectionPool(connection_class=CountingConnection, host="127.0.0.1", port=port)
    return redis.Redis(connection_pool=pool)


def test_enqueue_and_get_task(rdb: "redis.Redis[bytes]") -> None:
    c = shardq.Client(rdb, prefix="t")
    info = c.enqueue("email:send", {"to": "a@b.com"}, queue="mail", group="tenant-7", max_retry=3,
                     timeout=timedelta(seconds=30), retention=600, headers={"tenant": "acme"},
                     traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    assert info.state == "pending" and info.queue == "mail" and info.partition == 0
    assert len(info.id) == 36 and info.id[14] == "7"
    got = c.get_task("mail", info.id)
    assert got.id == info.id and got.type == "email:send" and got.state == "pending"
    assert got.decode() == {"to": "a@b.com"} and not got.raw
    assert got.group == "tenant-7" and got.max_retry == 3 and got.timeout == timedelta(seconds=30)
    assert got.retention == timedelta(minutes=10)
    assert got.headers == {"tenant": "acme", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    assert got.enqueued_at is not None and abs(got.enqueued_at - datetime.now(timezone.utc)) < timedelta(seconds=5)
    assert got.result is None and not got.has_result
    assert rdb.get("t:protocol") == b"1.0"
    assert rdb.hget("t:queues", "mail") == b"1"


def test_delayed_and_unique(rdb: "redis.Redis[bytes]") -> None:
    c = shardq.Client(rdb)
    info = c.enqueue("tick", b"{}", process_in=60)
    assert info.state == "scheduled" and info.next_process_at is not None
    got = c.get_task("default", info.id)
    assert got.state == "scheduled" and got.next_process_at is not None
    at = datetime.now(timezone.utc) + timedelta(hours=1)
    assert c.enqueue("tick", b"{}", process_at=at).state == "scheduled"
    c.enqueue("report", {"n": 1}, unique=3600)
    with pytest.raises(shardq.DuplicateUniqueTaskError, match="report:"):
        c.enqueue("report", {"n": 1}, unique=3600)
    c.enqueue("order", b"1", unique_by="order-42", unique_until_finished=True, unique_after=10)
    with pytest.raises(shardq.DuplicateUniqueTaskError, match="order-42"):
        c.enqueue("order", b"2", unique_by="order-42", unique=60)


def test_duplicate_task_id_returns_the_original(rdb: "redis.Redis[bytes]") -> None:
    c = shardq.Client(rdb, partitions={"orders": 4})
    first = c.enqueue("order:ship", b'{"n":1}', queue="orders", task_id="order-42")
    with pytest.raises(shardq.DuplicateTaskIDError) as e:
        c.enqueue("order:ship", b'{"n":2}', queue="orders", task_id="order-42")
    assert e.value.task_id == "order-42" and e.value.info is not None
    assert e.value.info.id == first.id == "order-42"
    assert e.value.info.partition == first.partition
    assert e.value.info.payload == b'{"n":1}'
    # in a batch, the duplicate's place holds the error with the info
    res = c.enqueue_many([Task("order:ship", b"x", queue="orders", task_id="order-42"),
                          Task("order:ship", b"y", queue="orders", task_id="order-43")], return_exceptions=True)
    assert isinstance(res[0], shardq.DuplicateTaskIDError) and res[0].info.payload == b'{"n":1}'
    assert isinstance(res[1], shardq.TaskInfo) and res[1].id == "order-43"
    with pytest.raises(shardq.EnqueueManyError) as many:
        c.enqueue_many([Task("order:ship", b"z", queue="orders", task_id="order-43")])
    assert isinstance(many.value.results[0], shardq.DuplicateTaskIDError)


def test_batch_is_one_round_trip(redis_server: Any, rdb: "redis.Redis[bytes]") -> None:
    r = counting_client(redis_server.port)
    c = shardq.Client(r, partitions={"q": 4})
    # warm up: the protocol claim, the layout, the registry, and the
    # scripts cached (the first call goes by enqueue_capped, the next by
    # enqueue, each sent again by EVAL after its NOSCRIPT)
    c.enqueue("warm", b"", queue="q")
    c.enqueue_many([Task("warm", b"", queue="q")])
    CountingConnection.sends = 0
    infos = c.enqueue_many([Task("job", {"i": i}, queue="q", group=f"g{i}") for i in range(8)])
    assert CountingConnection.sends == 1
    assert len({i.partition for i in infos}) > 1  # several partitions, one round trip
    for i in infos:
        assert c.get_task("q", i.id).decode()["i"] in range(8)
    # a single plain enqueue is one round trip too, once the queue is known
    c.enqueue_many([Task("job", b"")])
    c.enqueue("job", b"")
    CountingConnection.sends = 0
    c.enqueue("job", b"")
    assert CountingConnection.sends == 1
    r.close()


def test_noscript_falls_back_to_eval(rdb: "redis.Redis[bytes]") -> None:
    c = shardq.Client(rdb)
    c.enqueue("a", b"1")
    rdb.script_flush()
    info = c.enqueue_many([Task("a", b"2"), Task("a", b"3", process_in=5)])
    assert [i.state for i in info] == ["pending", "scheduled"]
    rdb.script_flush()
    assert c.get_task("default", info[0].id).payload == b"2"


@pytest.mark.parametrize("stored", [b"2.0", b"0.9", b"garbage", b"1", b"1.x"])
def test_protocol_version_refused(rdb: "redis.Redis[bytes]", stored: bytes) -> None:
    rdb.set("p:protocol", stored)
    c = shardq.Client(rdb, prefix="p")
    with pytest.raises(shardq.ProtocolVersionError) as e:
        c.enqueue("a", b"1")
    assert "p:protocol" in str(e.value) and stored.decode() in str(e.value) and "1.0" in str(e.value)
    assert e.value.key == "p:protocol" and e.value.stored == stored.decode() and e.value.ours == "1.0"
    assert rdb.keys("*") == [b"p:protocol"]  # nothing written
    assert rdb.get("p:protocol") == stored


def test_protocol_version_same_major(rdb: "redis.Redis[bytes]") -> None:
    rdb.set("p:protocol", "1.7")
    shardq.Client(rdb, prefix="p").enqueue("a", b"1")
    assert rdb.get("p:protocol") == b"1.7"


def test_layout_is_read_first(rdb: "redis.Redis[bytes]") -> None:
    rdb.hset("shardq:layout", "q", "2/4")
    c = shardq.Client(rdb, partitions={"q": 8})
    infos = c.enqueue_many([Task("a", b"", queue="q", group=f"g{i}") for i in range(20)])
    assert {i.partition for i in infos} == {0, 1}
    assert rdb.hget("shardq:queues", "q") == b"2"
    rdb.hset("shardq:layout", "bad", "9/2")  # does not parse: the configured count rules
    c2 = shardq.Client(rdb, partitions={"bad": 3})
    assert {i.partition for i in c2.enqueue_many([Task("a", b"", queue="bad", group=f"g{i}") for i in range(20)])} == {0, 1, 2}


def test_round_robin_starts_at_one(rdb: "redis.Redis[bytes]") -> None:
    c = shardq.Client(rdb, partitions={"q": 4})
    assert [c.enqueue("a", b"", queue="q").partition for _ in range(5)] == [1, 2, 3, 0, 1]


def test_closed_partition_is_routed_again(rdb: "redis.Redis[bytes]") -> None:
    rdb.set("{shardq:q:1}:feed:rank", "closed:0")
    c = shardq.Client(rdb, partitions={"q": 2})
    info = c.enqueue("a", b"x", queue="q")  # round-robin picks 1 first: closed
    assert info.partition == 0
    assert c.get_task("q", info.id).payload == b"x"


def test_queue_full(rdb: "redis.Redis[bytes]") -> None:
    rdb.hset("{shardq:q:0}:limits", "maxdepth", 1)
    c = shardq.Client(rdb)
    c.enqueue("a", b"1", queue="q")
    with pytest.raises(shardq.QueueFullError, match="MaxDepth 1"):
        c.enqueue("a", b"2", queue="q")


def test_compressed_and_encrypted_at_rest(rdb: "redis.Redis[bytes]") -> None:
    # varied words: zstd codes their literals with Huffman, so the
    # marker is not in the stored bytes in clear
    rng = __import__("random").Random(7)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(300)]
    big = b" ".join(rng.choice(words) + (b" XL-MARKER" if i % 50 == 0 else b"") for i in range(1500))
    plain = shardq.Client(rdb, compression="small")
    i1 = plain.enqueue("doc", big)
    sealed = shardq.Client(rdb, key_ring=RING)
    i2 = sealed.enqueue("doc", b"XL-MARKER secret")
    assert i2.encrypted_with == "k1"
    for k in rdb.keys("*"):
        if rdb.type(k) == b"list":
            for v in rdb.lrange(k, 0, -1):
                assert b"XL-MARKER" not in v
    assert plain.get_task("default", i1.id).payload == big
    got = sealed.get_task("default", i2.id)
    assert got.payload == b"XL-MARKER secret" and got.encrypted_with == "k1"
    with pytest.raises(shardq.UnknownKeyError, match="'k1'"):
        _ = plain.get_task("default", i2.id).payload
    with pytest.raises(shardq.PlaintextError):
        _ = sealed.get_task("default", i1.id).payload
    assert shardq.Client(rdb, key_ring=RING, allow_plaintext=True).get_task("default", i1.id).payload == big


def test_results(rdb: "redis.Redis[bytes]") -> None:
    c = shardq.Client(rdb, key_ring=RING)
    info = c.enqueue("echo", b"x", retention=600)
    sid = stored_id(info.id)
    t = "{shardq:default:0}"
    # what a Go worker leaves: a record and a sealed result
    rdb.hset(t + ":result", sid, Codec("none", key_ring=RING).wrap(b'{"ok":true}', sid, Use.RESULT))
    rec = msgpack.packb(["done", 1, 7, "w1", "", 0, 1767225600000, 1767225601000, 0, ""])
    rdb.hset(t + ":state", sid, rec)
    rdb.hset(t + ":msg", sid, rdb.lindex(t + ":s:0", 0) or b"")
    got = c.get_task("default", info.id)
    assert got.state == "succeeded" and got.attempts == 1 and got.worker == "w1"
    assert got.started_at == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert got.result == b'{"ok":true}'
    # a result sealed for another use does not open
    rdb.hset(t + ":result", sid, Codec("none", key_ring=RING).wrap(b"x", sid, Use.PAYLOAD))
    with pytest.raises(shardq.CorruptEnvelopeError, match="does not authenticate"):
        _ = c.get_task("default", info.id).result
    # a result a Go worker compressed with S2 names the codec
    rdb.hset(t + ":result", sid, b"\xc1\x01\x05\x10hello")
    with pytest.raises(shardq.UnsupportedCodecError, match="S2"):
        _ = shardq.Client(rdb).get_task("default", info.id).result
    with pytest.raises(shardq.TaskNotFoundError):
        c.get_task("default", "nope")
    with pytest.raises(shardq.TaskNotFoundError, match="no such queue"):
        c.get_task("never", info.id)


def test_context_headers(rdb: "redis.Redis[bytes]") -> None:
    c = shardq.Client(rdb, context_headers=lambda: {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01", "x": ""})
    info = c.enqueue("a", b"", headers={"tenant": "t"})
    assert c.get_task("default", info.id).headers == {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01", "tenant": "t"}


def test_ids_increase(rdb: "redis.Redis[bytes]") -> None:
    c = shardq.Client(rdb)
    ids = [i.id for i in c.enqueue_many([Task("a") for _ in range(200)])]
    assert ids == sorted(ids) and len(set(ids)) == 200
    assert time.time() > 0


def _worker(rdb: "redis.Redis[bytes]", wid: str, beat_ms: int, version: "str | None") -> None:
    status = {"h": f"h-{wid}", "p": 7}
    if version is not None:
        status["v"] = version
    rdb.zadd("p:workers", {wid: beat_ms})
    rdb.hset("p:workers:status", wid, msgpack.packb(status))


def test_refused_while_an_old_worker_runs(rdb: "redis.Redis[bytes]") -> None:
    secs, micros = rdb.time()
    now = secs * 1000 + micros // 1000
    _worker(rdb, "new", now, "1.0")
    _worker(rdb, "gone", now - 120_000, None)  # its heartbeat stopped two minutes ago
    c = shardq.Client(rdb, prefix="p")
    c.enqueue("a", b"1")
    _worker(rdb, "old", now, None)  # a 0.1.0 worker: no version in its status
    c2 = shardq.Client(rdb, prefix="p")
    with pytest.raises(shardq.ProtocolVersionError) as e:
        c2.enqueue("a", b"2")
    for want in ("protocol 1.0", "old (h-old, pid 7)", "shardq 0.1.0", "upgrade the workers first"):
        assert want in str(e.value)
    assert "gone" not in str(e.value)
    rdb.hdel("p:workers:status", "old")  # it stopped
    c2.enqueue("a", b"2")
