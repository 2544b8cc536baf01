"""The vendored scripts and how they are called (docs/protocol.md, "Loading
and calling the scripts"): EVALSHA, and EVAL when Redis answers NOSCRIPT."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from importlib import resources


@dataclass(frozen=True)
class Script:
    """A script's resolved source and the SHA-1 EVALSHA names it by."""

    name: str
    source: bytes = field(repr=False)
    sha1: str

    @classmethod
    def load(cls, name: str) -> "Script":
        """Read the vendored script ``name`` (shardq/_lua/<name>.lua)."""
        src = resources.files("shardq").joinpath("_lua").joinpath(f"{name}.lua").read_bytes()
        return cls(name, src, hashlib.sha1(src).hexdigest())


ENQUEUE = Script.load("enqueue")
ENQUEUE_CAPPED = Script.load("enqueue_capped")
ENQUEUE_ONE = Script.load("enqueue_one")
GET_TASK = Script.load("get_task")

#: Every script the client calls, by name.
ALL = {s.name: s for s in (ENQUEUE, ENQUEUE_CAPPED, ENQUEUE_ONE, GET_TASK)}

#: Error prefixes of a call Redis refused without running it.
REFUSED_PREFIXES = ("TRYAGAIN ", "CLUSTERDOWN ", "READONLY ", "LOADING ", "MASTERDOWN ")
