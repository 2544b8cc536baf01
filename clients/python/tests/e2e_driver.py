#!/usr/bin/python3
"""The Python client's e2e driver for internal/crosslang (contract.md there).

``e2e_driver.py enqueue`` enqueues the matrix's cases and prints what it
enqueued; ``e2e_driver.py results`` reads ``{"ids": [...]}`` on stdin and
prints each task's state and result, read through the client's own API.
The environment names the private redis-server and the options:
SHARDQ_REDIS_URL, SHARDQ_PREFIX, SHARDQ_QUEUE, SHARDQ_KEY_FILE, SHARDQ_CASE_TAG.
"""

from __future__ import annotations

import base64
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the package from the source tree

import msgpack  # noqa: E402
import redis  # noqa: E402

import shardq  # noqa: E402

RETENTION = 600  # seconds: 600,000 ms, so results stay readable


class CountingConnection(redis.Connection):
    """Counts writes to the server: a pipeline is one."""

    sends = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        type(self).sends += 1
        super().send_packed_command(command, check_health)


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"e2e_driver: environment variable {name} is not set")
    return value


def compressible(n: int) -> bytes:
    """n bytes or more of words: compressible, not a repeat of one line."""
    rng = random.Random(44)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(200)]
    out: list[str] = []
    size = 0
    while size < n:
        w = rng.choice(words)
        out.append(w)
        size += len(w) + 1
    return " ".join(out).encode()


def enqueue() -> dict[str, Any]:
    url, prefix, queue, tag = env("SHARDQ_REDIS_URL"), env("SHARDQ_PREFIX"), env("SHARDQ_QUEUE"), env("SHARDQ_CASE_TAG")
    ring = shardq.KeyRing.from_file(env("SHARDQ_KEY_FILE"))
    pool = redis.ConnectionPool.from_url(url, connection_class=CountingConnection)
    rdb = redis.Redis(connection_pool=pool)
    plain = shardq.Client(rdb, prefix=prefix, compression="none")
    small = shardq.Client(rdb, prefix=prefix, compression="small")
    sealed = shardq.Client(rdb, prefix=prefix, key_ring=ring)
    tasks: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []

    def report(case: str, info: shardq.TaskInfo, payload: bytes) -> None:
        tasks.append({"case": case, "id": info.id, "payload_base64": base64.b64encode(payload).decode()})

    obj = {"case": "plain", "n": 1}
    report("plain", plain.enqueue("echo", obj, queue=queue, retention=RETENTION), msgpack.packb(obj, use_bin_type=True))
    p = b'{"case":"delayed"}'
    report("delayed", plain.enqueue("echo", p, queue=queue, retention=RETENTION, process_in=1.0), p)
    p = b'{"case":"fair"}'
    report("fair", plain.enqueue("echo", p, queue=queue, retention=RETENTION, group="tenant-a"), p)
    p = compressible(6000)
    info = small.enqueue("echo", p, queue=queue, retention=RETENTION)
    report("compressed", info, p)
    p = b'{"case":"encrypted","secret":"XL-MARKER-ENCRYPTED"}'
    info = sealed.enqueue("echo", p, queue=queue, retention=RETENTION)
    checks.append({"name": "encrypted with the ring's current key", "ok": info.encrypted_with == ring.current,
                   "detail": f"key {info.encrypted_with!r}, current {ring.current!r}"})
    report("encrypted", info, p)

    first_payload, second_payload = b'{"case":"duplicate","n":1}', b'{"case":"duplicate","n":2}'
    first = plain.enqueue("echo", first_payload, queue=queue, retention=RETENTION, task_id=f"dup-{tag}")
    report("duplicate", first, first_payload)
    try:
        again = plain.enqueue("echo", second_payload, queue=queue, retention=RETENTION, task_id=f"dup-{tag}")
        checks.append({"name": "duplicate id returns the original", "ok": False,
                       "detail": f"the second call enqueued a new task {again.id!r}"})
    except shardq.DuplicateTaskIDError as e:
        orig = e.info
        ok = orig is not None and orig.id == first.id and orig.payload == first_payload
        detail = "no info" if orig is None else f"info of {orig.id!r}, payload {orig.payload!r}"
        checks.append({"name": "duplicate id returns the original", "ok": ok, "detail": detail})

    batch = [b'{"case":"batch","i":%d}' % i for i in range(3)]
    CountingConnection.sends = 0
    infos = plain.enqueue_many([shardq.Task("echo", b, queue=queue, retention=RETENTION) for b in batch])
    checks.append({"name": "batch is one round trip", "ok": CountingConnection.sends == 1,
                   "detail": f"{CountingConnection.sends} round trips for 3 tasks"})
    for i, (info, b) in enumerate(zip(infos, batch)):
        report(f"batch-{i}", info, b)
    rdb.close()
    return {"tasks": tasks, "checks": checks}


def results() -> dict[str, Any]:
    url, prefix, queue = env("SHARDQ_REDIS_URL"), env("SHARDQ_PREFIX"), env("SHARDQ_QUEUE")
    ring = shardq.KeyRing.from_file(env("SHARDQ_KEY_FILE"))
    ids = json.load(sys.stdin)["ids"]
    out: dict[str, Any] = {}
    # the worker seals every result with the ring; plain payloads are read too
    with shardq.Client.from_url(url, prefix=prefix, key_ring=ring, allow_plaintext=True) as client:
        for task_id in ids:
            info = client.get_task(queue, task_id)
            result = info.result
            out[task_id] = {"state": info.state,
                            "result_base64": base64.b64encode(result).decode() if result is not None else None}
    return {"tasks": out}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in ("enqueue", "results"):
        print(f"usage: {argv[0]} enqueue|results", file=sys.stderr)
        return 2
    try:
        doc = enqueue() if argv[1] == "enqueue" else results()
    except (shardq.ShardqError, redis.RedisError, OSError, ValueError, KeyError) as e:
        print(f"e2e_driver {argv[1]}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    json.dump(doc, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
