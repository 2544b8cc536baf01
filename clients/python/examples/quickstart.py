#!/usr/bin/python3
"""Enqueue a few tasks for shardq's Go workers, then read one back.

    /usr/bin/python3 examples/quickstart.py redis://127.0.0.1:<port>/0

Run it from clients/python against a Redis of your own (not a shared one).
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the package from the source tree

import shardq  # noqa: E402


def main(url: str) -> None:
    with shardq.Client.from_url(url, prefix="example") as client:
        # an object payload is msgpack-encoded; bytes are sent as they are
        info = client.enqueue("email:send", {"to": "a@b.com"}, queue="mail", max_retry=5,
                              timeout=timedelta(seconds=30), retention=timedelta(hours=1))
        print("enqueued", info.id, "to partition", info.partition, "of", info.queue)

        later = client.enqueue("report:build", b'{"month":"2026-01"}', process_in=timedelta(minutes=5))
        print("scheduled", later.id, "for", later.next_process_at)

        # idempotent enqueue: the second call raises with the first task's info
        client.enqueue("order:ship", b'{"order":42}', task_id="order-42")
        try:
            client.enqueue("order:ship", b'{"order":42}', task_id="order-42")
        except shardq.DuplicateTaskIDError as e:
            assert e.info is not None
            print("order-42 was already enqueued at", e.info.enqueued_at)

        # several tasks, one round trip
        infos = client.enqueue_many([shardq.Task("thumbnail", {"image": n}, group=f"tenant-{n % 2}") for n in range(3)])
        print("batch:", [i.id for i in infos])

        task = client.get_task("mail", info.id)
        print("read back:", task.state, task.decode())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
