"""The payload envelope (docs/protocol.md, "The payload envelope"): how a
payload, a result and the other values of a task are stored, compressed with
zstd or encrypted with AES-256-GCM under a key ring.

S2 (flags 0x01, 0x03, 0x05) is the Go producer's default compression; there
is no S2 library in Debian's Python, so this client neither writes it nor
reads it, and says so naming the codec (:class:`UnsupportedCodecError`).
"""

from __future__ import annotations

import base64
import binascii
import enum
import io
import json
import os
from pathlib import Path
from typing import Callable, Mapping, Optional, Union

import zstandard
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import (
    CorruptEnvelopeError,
    InvalidError,
    InvalidKeyRingError,
    PlaintextError,
    UnknownKeyError,
    UnsupportedCodecError,
    ValueTooLargeError,
)
from .names import DEFAULT_MAX_PAYLOAD_SIZE

#: The byte every wrapped value opens with.
MAGIC = 0xC1
#: Bytes of an encrypted value's nonce.
NONCE_SIZE = 12
_TAG_SIZE = 16
_CODEC_MASK = 0x03
_S2, _ZSTD, _DICT = 0x01, 0x02, 0x03
_ENCRYPTED = 0x04
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class Use(enum.IntEnum):
    """What a value is, the first byte of its encryption's associated data."""

    PAYLOAD = 1
    RESULT = 2
    PROGRESS = 3
    STEP = 4
    ERROR = 5

    def __str__(self) -> str:
        return {1: "payload", 2: "result", 3: "progress message", 4: "step value", 5: "error"}[int(self)]


#: The compressions a producer may choose; "fast" (S2) is refused.
COMPRESSIONS = ("none", "small", "fast")


class KeyRing:
    """AES-256 keys by key ID, one of them current.

    Writes use the current key; reads use whichever key a value names. The
    keys never appear in ``repr``, ``str`` or any error message: only their
    IDs do.
    """

    __slots__ = ("_current", "_keys", "_aeads")

    def __init__(self, current: str, keys: Mapping[str, bytes]) -> None:
        """Make a ring of ``keys`` (key ID -> 32 bytes) whose ``current``
        key encrypts. Raises :class:`InvalidKeyRingError`."""
        if not isinstance(current, str) or current == "":
            raise InvalidKeyRingError("invalid key ring: no current key ID")
        if current not in keys:
            raise InvalidKeyRingError(f"invalid key ring: current key {current!r} is not among its keys")
        self._keys: dict[str, bytes] = {}
        self._aeads: dict[str, AESGCM] = {}
        for kid in sorted(keys):
            key = keys[kid]
            size = len(kid.encode("utf-8")) if isinstance(kid, str) else 0
            if not 1 <= size <= 255:
                raise InvalidKeyRingError(f"invalid key ring: key ID {kid!r} is {size} bytes, want 1 to 255")
            if not isinstance(key, (bytes, bytearray)) or len(key) != 32:
                n = len(key) if isinstance(key, (bytes, bytearray)) else "not"
                raise InvalidKeyRingError(f"invalid key ring: key {kid!r} is {n} bytes, want 32 (AES-256)")
            self._keys[kid] = bytes(key)
            self._aeads[kid] = AESGCM(bytes(key))
        self._current = current

    @classmethod
    def from_json(cls, doc: Union[str, bytes]) -> "KeyRing":
        """Read a ring from the JSON form Go's ``queue.ParseKeyRing`` reads::

            {"current": "k2", "keys": {"k1": "<std base64 of 32 bytes>", "k2": "..."}}

        A field it does not know is refused, naming it.
        """
        try:
            v = json.loads(doc)
        except (ValueError, UnicodeDecodeError) as e:
            # json's messages give a position, never the document's text
            msg = e.msg if isinstance(e, json.JSONDecodeError) else "not UTF-8"
            raise InvalidKeyRingError(f"invalid key ring: not JSON: {msg}") from None
        if not isinstance(v, dict):
            raise InvalidKeyRingError("invalid key ring: not a JSON object of current and keys")
        for k in v:
            if k not in ("current", "keys"):
                raise InvalidKeyRingError(f"invalid key ring: unknown field {k!r}, want current and keys")
        current, keys = v.get("current", ""), v.get("keys") or {}
        if not isinstance(current, str):
            raise InvalidKeyRingError("invalid key ring: current is not a string")
        if not isinstance(keys, dict):
            raise InvalidKeyRingError("invalid key ring: keys is not an object of key ID -> base64")
        raw: dict[str, bytes] = {}
        for kid, text in keys.items():
            if not isinstance(text, str):
                raise InvalidKeyRingError(f"invalid key ring: key {kid!r} is not a base64 string")
            try:
                raw[kid] = base64.b64decode(text.encode("ascii"), validate=True)
            except (binascii.Error, UnicodeEncodeError):
                raise InvalidKeyRingError(f"invalid key ring: key {kid!r} is not standard base64") from None
        return cls(current, raw)

    @classmethod
    def from_file(cls, path: Union[str, "os.PathLike[str]"]) -> "KeyRing":
        """Read a ring from a JSON file (see :meth:`from_json`)."""
        try:
            doc = Path(path).read_bytes()
        except OSError as e:
            raise InvalidKeyRingError(f"invalid key ring: read {os.fspath(path)!r}: {e.strerror}") from None
        return cls.from_json(doc)

    @property
    def current(self) -> str:
        """The ID of the key new values are encrypted with."""
        return self._current

    @property
    def ids(self) -> list[str]:
        """The ring's key IDs, sorted."""
        return sorted(self._keys)

    def _aead(self, kid: str) -> Optional[AESGCM]:
        return self._aeads.get(kid)

    def __repr__(self) -> str:
        return f"KeyRing(current={self._current!r}, ids={self.ids!r})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a KeyRing is not pickled: its keys would leave the process")


def _aad(stored_id: bytes, use: Use, flags: int) -> bytes:
    return bytes([int(use), flags]) + stored_id


def _zstd_compress(b: bytes) -> bytes:
    """A zstd frame of b, without its magic, at a fast level, no checksum."""
    frame = zstandard.ZstdCompressor(level=1, write_checksum=False, write_content_size=True).compress(b)
    return frame[len(_ZSTD_MAGIC):] if frame.startswith(_ZSTD_MAGIC) else frame


def _zstd_decompress(body: bytes, limit: int) -> bytes:
    """Decode a zstd body (its first frame's magic left out), of one frame
    or several, to at most ``limit`` bytes."""
    data = _ZSTD_MAGIC + body
    try:
        size = zstandard.get_frame_parameters(data).content_size
    except zstandard.ZstdError as e:
        raise CorruptEnvelopeError(f"corrupt envelope: zstd: {e}") from None
    if size != zstandard.CONTENTSIZE_UNKNOWN and size > limit:
        raise ValueTooLargeError(f"zstd body of {size} bytes, limit {limit}")
    out = bytearray()
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
        while len(out) <= limit:
            chunk = reader.read(min(1 << 16, limit + 1 - len(out)))
            if not chunk:
                break
            out += chunk
    except zstandard.ZstdError as e:
        raise CorruptEnvelopeError(f"corrupt envelope: zstd within the limit of {limit} bytes: {e}") from None
    if len(out) > limit:
        raise ValueTooLargeError(f"zstd frames that hold more than the limit of {limit} bytes")
    return bytes(out)


def _s2_error(flags: int, use: Use) -> UnsupportedCodecError:
    what = "S2 against a dictionary" if flags == _DICT else "S2"
    return UnsupportedCodecError(
        f"this {use} is compressed with {what} (envelope flags {flags:#04x}), which the Python client cannot read: "
        "no S2 library is packaged for Debian's Python; have the Go side use compression \"small\" (zstd) or \"none\""
    )


class Codec:
    """Wraps and opens values by a client's compression and key ring."""

    def __init__(
        self,
        compression: str = "small",
        compress_above: int = 512,
        key_ring: Optional[KeyRing] = None,
        allow_plaintext: bool = False,
        nonce: Optional[Callable[[int], bytes]] = None,
    ) -> None:
        if compression == "fast":
            raise InvalidError(
                "invalid compression 'fast': S2 is not available to the Python client "
                "(Debian packages no S2 library); use 'small' (zstd) or 'none'"
            )
        if compression not in ("none", "small"):
            raise InvalidError(f"invalid compression {compression!r}: want 'small' (zstd) or 'none'")
        if not isinstance(compress_above, int) or compress_above < 0:
            raise InvalidError(f"invalid compress_above {compress_above!r}: want an int >= 0")
        if key_ring is not None and not isinstance(key_ring, KeyRing):
            raise InvalidError(f"invalid key_ring: a {type(key_ring).__name__}, not a KeyRing")
        self.compression = compression
        self.compress_above = compress_above
        self.key_ring = key_ring
        self.allow_plaintext = allow_plaintext
        # where nonces come from; only the golden vectors' tests fix it
        self._nonce = nonce or os.urandom

    def wrap(self, value: bytes, stored_id: bytes, use: Use = Use.PAYLOAD) -> bytes:
        """Return the stored form of ``value``, a value of the task
        ``stored_id`` for ``use``."""
        compressing = self.compression == "small" and len(value) >= self.compress_above and len(value) > 0
        ring = self.key_ring
        if ring is None:
            if compressing:
                body = _zstd_compress(value)
                if len(body) < len(value):
                    return bytes([MAGIC, _ZSTD]) + body
            if value[:1] == bytes([MAGIC]):
                return bytes([MAGIC, 0]) + value
            return value
        flags, plain = _ENCRYPTED, value
        if compressing:
            body = _zstd_compress(value)
            if len(body) < len(value):
                flags, plain = _ENCRYPTED | _ZSTD, body
        kid = ring.current.encode("utf-8")
        nonce = self._nonce(NONCE_SIZE)
        if len(nonce) != NONCE_SIZE:
            raise InvalidError(f"nonce source gave {len(nonce)} bytes, want {NONCE_SIZE}")
        aead = ring._aead(ring.current)
        assert aead is not None
        sealed = aead.encrypt(nonce, plain, _aad(stored_id, use, flags))
        return bytes([MAGIC, flags, len(kid)]) + kid + nonce + sealed

    def open(self, value: bytes, stored_id: bytes, use: Use = Use.PAYLOAD,
             limit: int = DEFAULT_MAX_PAYLOAD_SIZE) -> bytes:
        """Return the value ``value`` stores, decrypted and decompressed to at
        most ``limit`` bytes. Raises an :class:`~shardq.errors.EnvelopeError`."""
        wrapped = len(value) > 0 and value[0] == MAGIC
        sealed = wrapped and len(value) >= 2 and value[1] & _ENCRYPTED != 0
        if self.key_ring is not None and not self.allow_plaintext and use != Use.ERROR and not sealed:
            form = f"a plain value of {len(value)} bytes" if not wrapped else \
                f"an envelope of flags {value[1] if len(value) > 1 else 0:#04x}, without the encrypted flag"
            raise PlaintextError(f"this {use} is not encrypted, though a key ring is configured: {form} "
                                 "(allow_plaintext accepts such values during a migration to encryption)")
        if not wrapped:
            return value
        if len(value) < 2:
            raise CorruptEnvelopeError(f"corrupt envelope: {len(value)} byte, no flags")
        flags = value[1]
        if flags == _DICT:
            raise _s2_error(flags, use)
        if flags & ~(_CODEC_MASK | _ENCRYPTED) or flags & _CODEC_MASK == _CODEC_MASK:
            raise CorruptEnvelopeError(f"corrupt envelope: {len(value)} bytes, flags {flags:#04x}")
        body = value[2:]
        if flags & _ENCRYPTED:
            n = value[2] if len(value) > 2 else 0
            if n == 0 or len(value) < 3 + n:
                raise CorruptEnvelopeError(f"corrupt envelope: encrypted, but its key ID is cut short ({len(value)} bytes)")
            kid = value[3 : 3 + n].decode("utf-8", "replace")
            if self.key_ring is None:
                raise UnknownKeyError(f"this {use} is encrypted with key {kid!r}, and no key ring is configured to decrypt it")
            aead = self.key_ring._aead(kid)
            if aead is None:
                raise UnknownKeyError(f"this {use} is encrypted with key {kid!r}, which is not in the key ring")
            rest = value[3 + n :]
            if len(rest) < NONCE_SIZE + _TAG_SIZE:
                raise CorruptEnvelopeError(f"corrupt envelope: encrypted with key {kid!r}, cut short at {len(value)} bytes")
            try:
                body = aead.decrypt(rest[:NONCE_SIZE], rest[NONCE_SIZE:], _aad(stored_id, use, flags))
            except InvalidTag:
                raise CorruptEnvelopeError(
                    f"corrupt envelope: encrypted with key {kid!r}, does not authenticate: tampered with, or not this task's {use}"
                ) from None
        codec = flags & _CODEC_MASK
        if codec == _S2:
            raise _s2_error(flags, use)
        if codec == _ZSTD:
            return _zstd_decompress(body, limit)
        if len(body) > limit:
            raise ValueTooLargeError(f"a {use} of {len(body)} bytes, limit {limit}")
        return bytes(body)


def key_id(value: bytes) -> str:
    """The ID of the key ``value`` is encrypted with, or "" when it is not
    encrypted (or not a well-formed envelope)."""
    if len(value) < 3 or value[0] != MAGIC or not value[1] & _ENCRYPTED:
        return ""
    n = value[2]
    if n == 0 or len(value) < 3 + n:
        return ""
    return value[3 : 3 + n].decode("utf-8", "replace")


