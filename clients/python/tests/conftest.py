"""Fixtures: a private redis-server per test session, emptied per test.

Never the Redis on 127.0.0.1:6379: the server runs on a free port, saves
nothing, and is killed after the session.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest
import redis

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package from the source tree

REPO = HERE.parent.parent.parent
VECTORS = REPO / "testdata" / "protocol"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A redis-server this test session started."""

    def __init__(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.skip("redis-server is not installed")
        self.dir = tempfile.mkdtemp(prefix="shardq-py-redis-")
        for _ in range(5):
            self.port = _free_port()
            if self.port == 6379:
                continue
            self.proc = subprocess.Popen(
                [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", self.dir, "--logfile", ""],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            if self._ready():
                return
            self.proc.kill()
            self.proc.wait()
        raise RuntimeError("redis-server did not start on a free port")

    def _ready(self) -> bool:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                redis.Redis(port=self.port, socket_timeout=1).ping()
                return True
            except redis.ConnectionError:
                time.sleep(0.02)
        return False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> "redis.Redis[bytes]":
        return redis.Redis(host="127.0.0.1", port=self.port)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def rdb(redis_server: RedisServer) -> Iterator["redis.Redis[bytes]"]:
    """A client of the private server, emptied before the test."""
    r = redis_server.client()
    r.flushall()
    r.script_flush()
    try:
        yield r
    finally:
        r.close()


def pytest_report_header() -> str:
    return f"python {sys.executable}; vectors {VECTORS}; redis-server {shutil.which('redis-server')}; pid {os.getpid()}"
