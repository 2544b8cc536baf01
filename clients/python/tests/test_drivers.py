"""The bench driver and the e2e driver run as their contract says (short
runs; the lead's harnesses run them for real)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(args: list[str], env: dict[str, str] | None = None, stdin: str = "") -> Any:
    p = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("batch", [1, 10])
def test_bench(redis_server: Any, rdb: Any, batch: int) -> None:
    out = run(["bench.py", "--url", redis_server.url, "--prefix", "b", "--queue", "q", "--tasks", "50", "--batch", str(batch)])
    assert out["tasks"] == 50 and out["seconds"] > 0
    assert rdb.llen("{b:q:0}:s:0") == 51  # the warm-up too


def test_e2e_driver_enqueue(redis_server: Any, rdb: Any, tmp_path: Path) -> None:
    ring = tmp_path / "ring.json"
    ring.write_text(json.dumps({"current": "k2", "keys": {"k1": base64.b64encode(bytes(32)).decode(),
                                                          "k2": base64.b64encode(bytes(range(32))).decode()}}))
    env = {"SHARDQ_REDIS_URL": redis_server.url, "SHARDQ_PREFIX": "xl", "SHARDQ_QUEUE": "xl",
           "SHARDQ_KEY_FILE": str(ring), "SHARDQ_CASE_TAG": "py", "PATH": "/usr/bin:/bin"}
    out = run(["tests/e2e_driver.py", "enqueue"], env)
    assert [t["case"] for t in out["tasks"]] == ["plain", "delayed", "fair", "compressed", "encrypted", "duplicate",
                                                 "batch-0", "batch-1", "batch-2"]
    assert all(c["ok"] for c in out["checks"]), out["checks"]
    ids = [t["id"] for t in out["tasks"]]
    assert "dup-py" in ids
    back = run(["tests/e2e_driver.py", "results"], env, json.dumps({"ids": ids}))
    # no worker ran: the tasks wait, without results
    assert {v["state"] for v in back["tasks"].values()} == {"pending", "scheduled"}
    assert all(v["result_base64"] is None for v in back["tasks"].values())
