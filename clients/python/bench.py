#!/usr/bin/python3
"""The Python client's bench driver (internal/crosslang/contract.md's bench).

    bench.py --url redis://127.0.0.1:<port>/0 --prefix <p> --queue <q> --tasks <N> --batch <B>

Enqueues N tasks of type ``bench`` with a 64-byte payload and no option: with
B == 1, N single enqueues one after another; with B > 1, N/B enqueue_many
calls of B tasks. Only the loop is timed, after connecting and one warm-up
enqueue; it prints one JSON line, ``{"tasks": N, "seconds": <float>}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the package from the source tree

import shardq  # noqa: E402

PAYLOAD = bytes(range(64))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--prefix", default="shardq")
    ap.add_argument("--queue", default="default")
    ap.add_argument("--tasks", type=int, required=True)
    ap.add_argument("--batch", type=int, default=1)
    a = ap.parse_args(argv)
    if a.tasks < 1 or a.batch < 1:
        ap.error(f"--tasks {a.tasks} and --batch {a.batch} must be at least 1")
    with shardq.Client.from_url(a.url, prefix=a.prefix) as client:
        client.enqueue("bench", PAYLOAD, queue=a.queue)  # warm-up, not counted
        done = 0
        start = time.perf_counter()
        if a.batch == 1:
            for _ in range(a.tasks):
                client.enqueue("bench", PAYLOAD, queue=a.queue)
            done = a.tasks
        else:
            batch = [shardq.Task("bench", PAYLOAD, queue=a.queue) for _ in range(a.batch)]
            for _ in range(a.tasks // a.batch):
                client.enqueue_many(batch)
                done += a.batch
        seconds = time.perf_counter() - start
    print(json.dumps({"tasks": done, "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
