"""Names, options and configuration refused before anything is written,
with errors that name the value."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
import redis

import shardq
from shardq.names import name_problem

# never connected: every error comes before a write
OFFLINE = redis.Redis(host="127.0.0.1", port=1)


def client(**kw: Any) -> shardq.Client:
    return shardq.Client(OFFLINE, **kw)


@pytest.mark.parametrize("name,why", [
    ("", "empty"),
    ("a" * 129, "129 bytes"),
    ("ü" * 65, "130 bytes"),
    ("a b", "U+0020"),
    ("a\tb", "U+0009"),
    ("a\u00a0b", "U+00A0"),
    ("a\u3000b", "U+3000"),
    ("a\u0085b", "U+0085"),
    ("a\x7fb", "U+007F"),
    ("a{b", "'{'"),
    ("a}b", "'}'"),
    ("\ud800", "UTF-8"),
])
def test_bad_names(name: str, why: str) -> None:
    problem = name_problem(name)
    assert problem is not None and why in problem
    with pytest.raises(shardq.InvalidError) as e:
        client().enqueue(name, b"")
    assert "task type" in str(e.value) and why in str(e.value)
    with pytest.raises(shardq.InvalidError, match="queue name"):
        client().enqueue("t", b"", queue=name)
    with pytest.raises(shardq.InvalidError, match="group"):
        client().enqueue("t", b"", group=name)
    with pytest.raises(shardq.InvalidError, match="task ID"):
        client().enqueue("t", b"", task_id=name)
    with pytest.raises(shardq.InvalidError, match="prefix"):
        client(prefix=name)


@pytest.mark.parametrize("name", ["a" * 128, "ü" * 64, "email:send", "order-42", "a\u200bb", "日本"])
def test_good_names(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize("options,match", [
    ({"max_retry": -1}, "max_retry -1"),
    ({"max_retry": 1 << 63}, "max_retry"),
    ({"max_retry": True}, "max_retry True"),
    ({"timeout": 0}, "timeout 0"),
    ({"timeout": timedelta(microseconds=10)}, "timeout"),
    ({"retention": -1}, "retention -1"),
    ({"unique": 0}, "unique 0"),
    ({"unique_by": "x"}, "unique_by 'x'"),
    ({"unique_by": "", "unique": 1}, "unique_by ''"),
    ({"unique_by": "x" * 129, "unique": 1}, "129 bytes"),
    ({"unique_until_finished": True, "unique_after": -1}, "unique_after -1"),
    ({"process_in": 1, "process_at": 2}, "not both"),
    ({"process_in": -1}, "process_in -1"),
    ({"process_at": datetime(2030, 1, 1)}, "naive"),
    ({"deadline": "tomorrow"}, "deadline 'tomorrow'"),
    ({"headers": {"": "v"}}, "header key ''"),
    ({"headers": {"a\nb": "v"}}, "header key"),
    ({"headers": {"k": "v" * 4096}}, "4097 bytes"),
    ({"headers": {"k": 1}}, "must be str"),
    ({"traceparent": "not-a-trace"}, "traceparent 'not-a-trace'"),
    ({"raw": True, "payload": {"a": 1}}, "raw=True"),
    ({"raw": False, "payload": b"\xc1"}, "not one msgpack value"),
    ({"payload": object()}, "does not encode"),
    ({"no_such_option": 1}, "no_such_option"),
])
def test_bad_options(options: dict[str, Any], match: str) -> None:
    payload = options.pop("payload", b"")
    with pytest.raises(shardq.InvalidError, match=match):
        client().enqueue("t", payload, **options)


def test_payload_size() -> None:
    c = client(max_payload_size=10)
    with pytest.raises(shardq.PayloadTooLargeError, match="11 bytes, limit 10"):
        c.enqueue("t", b"x" * 11)


def test_batch_validation_names_the_task() -> None:
    with pytest.raises(shardq.InvalidError, match="task 1: .*'a b'"):
        client().enqueue_many([shardq.Task("ok"), shardq.Task("a b")])
    with pytest.raises(shardq.InvalidError, match="task 0: a dict"):
        client().enqueue_many([{"type": "t"}])  # type: ignore[list-item]


@pytest.mark.parametrize("kw,match", [
    ({"compression": "fast"}, "S2 is not available"),
    ({"compression": "zip"}, "compression 'zip'"),
    ({"partitions": {"q": 0}}, r"partitions\['q'\] = 0"),
    ({"partitions": {"q": 1025}}, "1025"),
    ({"partitions": {"a b": 1}}, "'a b'"),
    ({"shard_size": 7001}, "shard_size 7001"),
    ({"feed_size": 0}, "feed_size 0"),
    ({"id_ttl": 0}, "id_ttl 0"),
    ({"max_payload_size": 0}, "max_payload_size 0"),
    ({"compress_above": -1}, "compress_above -1"),
    ({"key_ring": "k"}, "key_ring"),
])
def test_bad_config(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(shardq.InvalidError, match=match):
        client(**kw)


def test_redis_settings_refused() -> None:
    with pytest.raises(shardq.InvalidError, match="decode_responses"):
        shardq.Client(redis.Redis(port=1, decode_responses=True))
    with pytest.raises(shardq.InvalidError, match="must not be sent again"):
        shardq.Client(redis.Redis(port=1, retry_on_timeout=True))
    with pytest.raises(shardq.InvalidError, match="retry_on_error"):
        shardq.Client(redis.Redis(port=1, retry_on_error=[redis.ConnectionError]))
