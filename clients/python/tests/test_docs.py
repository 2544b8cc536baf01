"""The README's program and the example run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run(args: list[str], url: str) -> str:
    env = dict(os.environ, SHARDQ_REDIS_URL=url, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_readme_program(redis_server: Any, rdb: Any) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    program = next(b for b in blocks if "from_url(url)" in b)
    out = run(["-c", program], redis_server.url)
    assert "pending" in out and "{'to': 'a@b.com'}" in out


def test_example(redis_server: Any, rdb: Any) -> None:
    out = run(["examples/quickstart.py", redis_server.url], redis_server.url)
    assert "order-42 was already enqueued" in out and "read back: pending" in out
