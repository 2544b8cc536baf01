"""Choosing a partition (docs/protocol.md, "Choosing a partition") and what a
producer knows of its queues' routes: the layout it read, the registry
entries it wrote, round-robin."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Mapping, Optional

from .names import MAX_PARTITIONS

#: How long a producer trusts a layout it read, in seconds.
LAYOUT_REFRESH = 2.0
#: How often a producer writes a queue's registry entry again, in seconds.
REGISTRY_REFRESH = 60.0


def fnv1a32(data: bytes) -> int:
    """FNV-1a, 32 bits, of data."""
    h = 2166136261
    for c in data:
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def pick(route_key: bytes, count: int) -> int:
    """The partition of a task with a route key among ``count`` partitions."""
    return fnv1a32(route_key) % count


def _count(text: str) -> Optional[int]:
    if not text or not text.isascii() or not text.isdigit():
        return None
    return int(text)


@dataclass(frozen=True)
class Layout:
    """A queue's layout as an operator set it: producers route to
    ``0..route-1``, workers serve ``0..serve-1``."""

    route: int
    serve: int

    @classmethod
    def parse(cls, value: str) -> Optional["Layout"]:
        """Read ``<route>/<serve>``; None when it does not parse (then the
        queue keeps the configured count)."""
        r, sep, s = value.partition("/")
        route, serve = _count(r), _count(s)
        if not sep or route is None or serve is None or not 1 <= route <= serve <= MAX_PARTITIONS:
            return None
        return cls(route, serve)


class Routes:
    """One producer's routes. Thread-safe."""

    def __init__(self, partitions: Mapping[str, int]) -> None:
        self._partitions = dict(partitions)
        self._lock = threading.Lock()
        self._rr = 0
        self._layouts: dict[str, tuple[Optional[Layout], float]] = {}
        self._registered: dict[str, tuple[int, float]] = {}

    def count(self, queue: str) -> int:
        """How many partitions the queue's new tasks go to: the layout's
        route count when one was read, else the configured count (1)."""
        entry = self._layouts.get(queue)
        if entry is not None and entry[0] is not None:
            return entry[0].route
        return max(self._partitions.get(queue, 1), 1)

    def pick(self, queue: str, route_key: Optional[bytes]) -> int:
        """The partition of a task of ``queue``: by its route key's hash, or
        round-robin (a new client's first such task goes to ``1 % count``)."""
        n = self.count(queue)
        if n == 1:
            return 0
        if route_key is None:
            with self._lock:
                self._rr += 1
                return self._rr % n
        return pick(route_key, n)

    def guessing(self, queue: str) -> bool:
        """Whether routing now would guess: the configured count is over 1
        and no layout was ever read (quirk 13: read it first)."""
        return self._partitions.get(queue, 1) > 1 and queue not in self._layouts

    def stale(self, queue: str) -> bool:
        """Whether the queue's layout was not read within LAYOUT_REFRESH."""
        entry = self._layouts.get(queue)
        return entry is None or time.monotonic() - entry[1] >= LAYOUT_REFRESH

    def registered(self, queue: str) -> bool:
        """Whether this producer wrote the queue's registry entry, with its
        count now, within REGISTRY_REFRESH."""
        entry = self._registered.get(queue)
        return entry is not None and entry[0] == self.count(queue) and time.monotonic() - entry[1] < REGISTRY_REFRESH

    def known(self, queue: str) -> bool:
        """Whether a call to the queue need carry neither a registry write
        nor a layout read."""
        return self.registered(queue) and not self.stale(queue)

    def store(self, queues: list[str], values: list[Optional[bytes]]) -> None:
        """Keep an HMGET reply of the layouts of queues."""
        now = time.monotonic()
        with self._lock:
            for q, v in zip(queues, values):
                layout = Layout.parse(v.decode("utf-8", "replace")) if v is not None else None
                self._layouts[q] = (layout, now)

    def remember(self, fresh: Mapping[str, int]) -> None:
        """Record registry entries written (queue -> count)."""
        now = time.monotonic()
        with self._lock:
            for q, n in fresh.items():
                self._registered[q] = (n, now)
