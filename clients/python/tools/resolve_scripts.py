#!/usr/bin/python3
"""Vendor the resolved Lua sources of the scripts the Python client calls.

Redis runs a script's *resolved* source (docs/protocol.md, "The scripts'
sources"): every ``--@include <name>`` line is replaced by
``lua/engine/include/<name>.lua`` when it exists, else
``lua/include/<name>.lua``, resolved the same way, each file inlined once per
script; a ``--@script <name>`` line is replaced by ``lua/engine/<name>.lua``;
an inlined file's first line is dropped when it opens with ``#!``; every other
line is kept, ended by ``\\n``.

Usage: ``/usr/bin/python3 tools/resolve_scripts.py [--check]`` from
clients/python. It writes ``shardq/_lua/<name>.lua``; with ``--check`` it
writes nothing and exits 1 when a vendored file differs from the sources.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

#: The scripts the client calls, by name (lua/engine/<name>.lua).
SCRIPTS = ("enqueue", "enqueue_capped", "enqueue_one", "get_task")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
VENDOR = HERE.parent / "shardq" / "_lua"

INCLUDE = "--@include "
SCRIPT = "--@script "


class ResolveError(Exception):
    """A script names an include that does not exist, or includes itself."""


def _lines(src: str) -> list[str]:
    """Split as Go's bufio.ScanLines does: on "\\n", a trailing "\\r" dropped."""
    lines = src.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the text ended with a newline: no empty last line
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def resolve(name: str, lua_dir: Path | None = None) -> str:
    """Return the resolved source of lua/engine/<name>.lua."""
    lua = lua_dir if lua_dir is not None else REPO / "lua"
    engine = lua / "engine"
    done: set[Path] = set()
    out: list[str] = []

    def include_file(inc: str) -> Path:
        own = engine / "include" / f"{inc}.lua"
        return own if own.exists() else lua / "include" / f"{inc}.lua"

    def inline(file: Path, stack: list[Path]) -> None:
        if file in stack:
            chain = " -> ".join(str(p.relative_to(lua)) for p in [*stack, file])
            raise ResolveError(f"include cycle: {chain}")
        if file in done:
            return
        if not file.exists():
            where = f" (from {stack[-1].relative_to(lua)})" if stack else ""
            raise ResolveError(f"missing script file {file}{where}")
        stack = [*stack, file]
        for n, line in enumerate(_lines(file.read_text(encoding="utf-8"))):
            if n == 0 and len(stack) > 1 and line.startswith("#!"):
                continue
            directive = line.strip()
            if directive.startswith(INCLUDE):
                inline(include_file(directive[len(INCLUDE):].strip()), stack)
                continue
            if directive.startswith(SCRIPT):
                inline(engine / f"{directive[len(SCRIPT):].strip()}.lua", stack)
                continue
            out.append(line + "\n")
        done.add(file)

    inline(engine / f"{name}.lua", [])
    return "".join(out)


def main(argv: list[str]) -> int:
    """Write (or, with --check, compare) every vendored script."""
    check = "--check" in argv
    stale = []
    for name in SCRIPTS:
        src = resolve(name).encode("utf-8")
        path = VENDOR / f"{name}.lua"
        sha = hashlib.sha1(src).hexdigest()
        if check:
            if not path.exists() or path.read_bytes() != src:
                stale.append(name)
            continue
        path.write_bytes(src)
        print(f"{name}: {len(src)} bytes, sha1 {sha}")
    if stale:
        print(f"stale vendored scripts: {', '.join(stale)}; run tools/resolve_scripts.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
