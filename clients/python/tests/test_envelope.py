"""Key rings and the envelope."""

from __future__ import annotations

import base64
import json
import pickle
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import shardq
from shardq import KeyRing
from shardq.envelope import Codec, Use, key_id

K1, K2 = bytes(range(32)), bytes(range(32, 64))
SID = bytes.fromhex("019b77086a7b7cc48d2e3f4a5b6c7d8e")


def ring_json(**over: object) -> str:
    doc = {"current": "k2", "keys": {"k1": base64.b64encode(K1).decode(), "k2": base64.b64encode(K2).decode()}}
    doc.update(over)
    return json.dumps(doc)


def test_key_ring_from_json(tmp_path: Path) -> None:
    ring = KeyRing.from_json(ring_json())
    assert ring.current == "k2" and ring.ids == ["k1", "k2"]
    f = tmp_path / "ring.json"
    f.write_text(ring_json())
    assert KeyRing.from_file(f).ids == ["k1", "k2"]
    secret = base64.b64encode(K2).decode()
    for text in (repr(ring), str(ring), repr(shardq.Client.__new__(shardq.Client).__class__)):
        assert secret not in text and K2.hex() not in text
    with pytest.raises(TypeError):
        pickle.dumps(ring)


@pytest.mark.parametrize("doc,match", [
    ("{", "not JSON"),
    ("[]", "not a JSON object"),
    (ring_json(curent="k1"), "unknown field 'curent'"),
    (ring_json(current=""), "no current key ID"),
    (ring_json(current="k9"), "current key 'k9' is not among its keys"),
    (ring_json(keys={"k2": "!!!"}), "key 'k2' is not standard base64"),
    (ring_json(keys={"k2": base64.b64encode(b"short").decode()}), "key 'k2' is 5 bytes, want 32"),
    (ring_json(keys={"k2": 5}), "key 'k2' is not a base64 string"),
    (json.dumps({"current": "x" * 256, "keys": {"x" * 256: base64.b64encode(K1).decode()}}), "256 bytes"),
])
def test_bad_key_rings(doc: str, match: str) -> None:
    with pytest.raises(shardq.InvalidKeyRingError, match=match) as e:
        KeyRing.from_json(doc)
    assert base64.b64encode(K1).decode() not in str(e.value)
    assert base64.b64encode(K2).decode() not in str(e.value)


def test_missing_key_file(tmp_path: Path) -> None:
    with pytest.raises(shardq.InvalidKeyRingError, match="nope.json"):
        KeyRing.from_file(tmp_path / "nope.json")


def test_rotation_reads_old_keys() -> None:
    old = Codec("none", key_ring=KeyRing("k1", {"k1": K1}))
    sealed = old.wrap(b"v", SID)
    assert key_id(sealed) == "k1"
    new = Codec("none", key_ring=KeyRing.from_json(ring_json()))
    assert new.open(sealed, SID) == b"v"
    assert key_id(new.wrap(b"v", SID)) == "k2"


def test_sealed_values_are_bound() -> None:
    c = Codec("small", compress_above=4, key_ring=KeyRing("k1", {"k1": K1}))
    v = c.wrap(b"hello hello hello hello hello", SID, Use.RESULT)
    assert v[:2] == b"\xc1\x06"  # zstd, then sealed
    assert c.open(v, SID, Use.RESULT) == b"hello hello hello hello hello"
    for sid, use in ((b"other", Use.RESULT), (SID, Use.PAYLOAD)):
        with pytest.raises(shardq.CorruptEnvelopeError, match="does not authenticate"):
            c.open(v, sid, use)
    flipped = v[:1] + b"\x04" + v[2:]  # the compression bit cleared
    with pytest.raises(shardq.CorruptEnvelopeError):
        c.open(flipped, SID, Use.RESULT)
    with pytest.raises(shardq.UnknownKeyError, match="no key ring"):
        Codec("none").open(v, SID, Use.RESULT)
    with pytest.raises(shardq.CorruptEnvelopeError, match="cut short"):
        c.open(v[:20], SID, Use.RESULT)


def test_plain_values() -> None:
    c = Codec("none")
    assert c.wrap(b"abc", SID) == b"abc"
    assert c.wrap(b"\xc1\x00\x01", SID) == b"\xc1\x00\xc1\x00\x01"
    assert c.open(b"\xc1\x00\xc1\x00\x01", SID) == b"\xc1\x00\x01"
    for flags in (0x07, 0x08, 0x80):
        with pytest.raises(shardq.CorruptEnvelopeError, match=f"{flags:#04x}"):
            c.open(bytes([0xC1, flags]) + b"xx", SID)
    for flags, what in ((0x01, "S2"), (0x03, "S2 against a dictionary")):
        with pytest.raises(shardq.UnsupportedCodecError, match=what):
            c.open(bytes([0xC1, flags]) + b"xx", SID)
    ringed = Codec("none", key_ring=KeyRing("k1", {"k1": K1}))
    with pytest.raises(shardq.UnsupportedCodecError, match=r"S2 \(envelope flags 0x05\)"):
        ringed.open(_s2_sealed(), SID)
    with pytest.raises(shardq.PlaintextError):
        ringed.open(b"abc", SID)
    assert ringed.open(b"err", SID, Use.ERROR) == b"err"  # errors may be plain


def _s2_sealed() -> bytes:
    """A sealed S2 plaintext, as a Go producer with compression fast writes."""
    nonce = bytes(12)
    sealed = AESGCM(K1).encrypt(nonce, b"\x03abc", bytes([1, 0x05]) + SID)
    return b"\xc1\x05\x02k1" + nonce + sealed


def test_compression() -> None:
    c = Codec("small", compress_above=16)
    text = b"abcdefgh" * 100
    v = c.wrap(text, SID)
    assert v[:2] == b"\xc1\x02" and not v[2:].startswith(b"\x28\xb5\x2f\xfd")
    assert c.open(v, SID) == text
    assert c.wrap(b"short", SID) == b"short"  # under compress_above
    noise = bytes(range(256))
    assert c.wrap(noise, SID) == noise  # does not shrink: kept plain
    with pytest.raises(shardq.ValueTooLargeError, match="limit 100"):
        c.open(v, SID, limit=100)
    with pytest.raises(shardq.CorruptEnvelopeError, match="zstd"):
        c.open(b"\xc1\x02garbage", SID)
