"""The vendored scripts are the resolved sources of the repository's
lua/engine, by docs/protocol.md's rule."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from conftest import REPO

from shardq import scripts

TOOLS = Path(__file__).resolve().parent.parent / "tools" / "resolve_scripts.py"


def _resolver():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("resolve_scripts", TOOLS)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["resolve_scripts"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_vendored_scripts_are_the_resolved_sources() -> None:
    resolver = _resolver()
    for name in resolver.SCRIPTS:
        src = resolver.resolve(name, REPO / "lua").encode("utf-8")
        assert scripts.ALL[name].source == src, f"{name}: stale; run /usr/bin/python3 tools/resolve_scripts.py"
        assert scripts.ALL[name].sha1 == hashlib.sha1(src).hexdigest()


def test_get_task_sha1() -> None:
    # get_task is not in scripts.json: its SHA-1 is the resolve rule's,
    # and internal/crosslang/python_test.go checks it against Go's
    src = _resolver().resolve("get_task", REPO / "lua").encode("utf-8")
    assert src.startswith(b"#!lua flags=no-writes")
    assert scripts.GET_TASK.sha1 == hashlib.sha1(src).hexdigest()


def test_resolve_rules(tmp_path: Path) -> None:
    # includes: engine/include first, then include; once per script; a
    # "#!" first line of an inlined file dropped; --@script inlines a script
    (tmp_path / "engine" / "include").mkdir(parents=True)
    (tmp_path / "include").mkdir()
    (tmp_path / "engine" / "main.lua").write_text("#!lua flags=no-writes\n  --@include a\n--@include b\n--@script other\nreturn 1")
    (tmp_path / "engine" / "other.lua").write_text("#!lua\nlocal o = 1\n")
    (tmp_path / "engine" / "include" / "a.lua").write_text("#!lua\n--@include b\nlocal a = 1\n")
    (tmp_path / "include" / "a.lua").write_text("wrong\n")
    (tmp_path / "include" / "b.lua").write_text("local b = 2\r\n")
    got = _resolver().resolve("main", tmp_path)
    assert got == "#!lua flags=no-writes\nlocal b = 2\nlocal a = 1\nlocal o = 1\nreturn 1\n"
