"""Names and the other bounds of docs/protocol.md, "Names"."""

from __future__ import annotations

import unicodedata
from typing import Mapping, Optional

from .errors import InvalidError

#: A name's longest length, in bytes.
MAX_NAME_LEN = 128
#: Headers' keys and values together, in bytes, at most.
MAX_HEADERS_SIZE = 4096
#: A queue's partitions, at most.
MAX_PARTITIONS = 1024
#: The default payload limit, before compression and encryption.
DEFAULT_MAX_PAYLOAD_SIZE = 1 << 20

# Unicode's White_Space property (PropList.txt): Python's str.isspace()
# is a different set, so the characters are listed.
_WHITE_SPACE = frozenset(
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def name_problem(name: object) -> Optional[str]:
    """Say what keeps ``name`` from being a name, or return None.

    A name is 1 to 128 bytes of UTF-8 without ``{``, ``}``, white space
    (Unicode's ``White_Space``) or a control character (``Cc``).
    """
    if not isinstance(name, str):
        return f"a {type(name).__name__}, not a str"
    if name == "":
        return "empty"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "not valid UTF-8 (it holds a lone surrogate)"
    if size > MAX_NAME_LEN:
        return f"{size} bytes, at most {MAX_NAME_LEN}"
    for ch in name:
        if ch in "{}":
            return f"contains {ch!r}"
        if ch in _WHITE_SPACE or unicodedata.category(ch) == "Cc":
            return f"contains white space or a control character U+{ord(ch):04X}"
    return None


def check_name(what: str, name: object) -> str:
    """Return ``name`` when it is a valid name, else raise InvalidError
    naming ``what`` and the value."""
    problem = name_problem(name)
    if problem is not None:
        raise InvalidError(f"invalid {what} {name!r}: {problem}")
    assert isinstance(name, str)
    return name


def check_unique_by(unique_by: object) -> str:
    """A caller's uniqueness ID: 1 to 128 bytes, no other rule (quirk 9)."""
    if not isinstance(unique_by, str):
        raise InvalidError(f"invalid unique_by {unique_by!r}: a {type(unique_by).__name__}, not a str")
    try:
        size = len(unique_by.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidError(f"invalid unique_by {unique_by!r}: not valid UTF-8") from None
    if not 1 <= size <= MAX_NAME_LEN:
        raise InvalidError(f"invalid unique_by {unique_by!r}: {size} bytes, want 1 to {MAX_NAME_LEN}")
    return unique_by


def check_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Return the headers to write: empty values dropped (an empty value
    deletes a header), keys checked, the total size bounded."""
    out: dict[str, str] = {}
    for key, value in headers.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidError(f"invalid header {key!r}: {value!r}: keys and values must be str")
        if key == "" or any(c in key for c in "\x00\r\n"):
            raise InvalidError(f"invalid header key {key!r}: empty or with \\0, \\r or \\n")
        if value == "":
            out.pop(key, None)
            continue
        out[key] = value
    size = sum(len(k.encode("utf-8")) + len(v.encode("utf-8")) for k, v in out.items())
    if size > MAX_HEADERS_SIZE:
        raise InvalidError(f"headers of {size} bytes (keys and values), at most {MAX_HEADERS_SIZE}")
    return out
