// The pieces without Redis: names, IDs, msgpack's shortest forms, the
// layout's and the protocol version's parsing, the envelope's refusals.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Codec, Use } from '../src/envelope.js';
import { EnvelopeError, KeyRingError, ProtocolVersionError } from '../src/errors.js';
import { IdGenerator, idTime, publicId, storedId } from '../src/ids.js';
import { KeyRing } from '../src/keyring.js';
import { Writer } from '../src/msgpack.js';
import { nameProblem } from '../src/names.js';
import { checkStored, parseVersion } from '../src/protocol.js';
import { parseLayout } from '../src/route.js';

describe('names', () => {
  it('takes 1 to 128 bytes of UTF-8 without braces, white space or control characters', () => {
    for (const ok of ['a', 'email:send', 'ü-grüße', 'x'.repeat(128), 'tenant/7', '日本']) assert.equal(nameProblem(ok), '', ok);
    for (const bad of ['', 'x'.repeat(129), '{a', 'a}', 'a b', 'a\u2003b', 'a\u3000', '\u0085', 'a\u007f', 'a\ud83d']) assert.notEqual(nameProblem(bad), '', JSON.stringify(bad));
  });
});

describe('IDs', () => {
  it('makes increasing UUIDv7s holding the clock millisecond', () => {
    const g = new IdGenerator();
    let prev = '';
    for (let i = 0; i < 5000; i++) {
      const id = g.next(1_767_225_600_123);
      assert.equal(id[6]! >> 4, 7);
      assert.equal(id[8]! & 0xc0, 0x80);
      const text = publicId(id);
      assert.match(text, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(text > prev, `${text} after ${prev}`);
      assert.ok(Math.abs(idTime(id)! - 1_767_225_600_123) <= 2);
      assert.equal(storedId(text).toString('hex'), id.toString('hex'));
      prev = text;
    }
    assert.equal(idTime(g.next(1_767_225_600_500)), 1_767_225_600_500);
  });
});

describe('msgpack', () => {
  const hexOf = (f: (w: Writer) => Writer) => f(new Writer()).done().toString('hex');
  it('writes integers in the shortest form', () => {
    const cases: [number | bigint, string][] = [
      [0, '00'], [127, '7f'], [128, 'cc80'], [255, 'ccff'], [256, 'cd0100'], [65535, 'cdffff'], [65536, 'ce00010000'],
      [4294967295, 'ceffffffff'], [4294967296, 'cf0000000100000000'], [(1n << 63n) - 1n, 'cf7fffffffffffffff'],
      [-1, 'ff'], [-32, 'e0'], [-33, 'd0df'], [-128, 'd080'], [-129, 'd1ff7f'], [-32768, 'd18000'], [-32769, 'd2ffff7fff'],
      [-2147483648, 'd280000000'], [-2147483649, 'd3ffffffff7fffffff'], [-10001, 'd1d8ef'],
    ];
    for (const [v, want] of cases) assert.equal(hexOf((w) => w.int(v)), want, String(v));
  });
  it('writes strings, binary and maps in the shortest form', () => {
    assert.equal(hexOf((w) => w.str(Buffer.alloc(31, 0x61))).slice(0, 2), 'bf');
    assert.equal(hexOf((w) => w.str(Buffer.alloc(32, 0x61))).slice(0, 4), 'd920');
    assert.equal(hexOf((w) => w.str(Buffer.alloc(256, 0x61))).slice(0, 6), 'da0100');
    assert.equal(hexOf((w) => w.bin(Buffer.alloc(255))).slice(0, 4), 'c4ff');
    assert.equal(hexOf((w) => w.bin(Buffer.alloc(256))).slice(0, 6), 'c50100');
    assert.equal(hexOf((w) => w.bin(Buffer.alloc(65536))).slice(0, 10), 'c600010000');
    assert.equal(hexOf((w) => w.mapHeader(15)), '8f');
    assert.equal(hexOf((w) => w.mapHeader(16)), 'de0010');
  });
});

describe('layout and protocol version', () => {
  it('parses a layout <route>/<serve> and ignores one that does not parse', () => {
    assert.deepEqual(parseLayout('2/4'), { route: 2, serve: 4 });
    assert.deepEqual(parseLayout('1024/1024'), { route: 1024, serve: 1024 });
    for (const bad of ['', '4', '4/2', '0/1', '1/1025', 'a/b', '1/2/3', ' 1/2', null]) assert.equal(parseLayout(bad), undefined, String(bad));
  });
  it('parses <major>.<minor> of 1 to 6 digits, the major at least 1', () => {
    assert.deepEqual(parseVersion('1.0'), { major: 1, minor: 0 });
    assert.deepEqual(parseVersion('999999.999999'), { major: 999999, minor: 999999 });
    for (const bad of ['1', '1.', '.0', '0.1', '1.0.0', '+1.0', '1234567.0', 'v1.0', '1.0 ']) assert.equal(parseVersion(bad), undefined, bad);
    assert.doesNotThrow(() => checkStored('p', null));
    assert.doesNotThrow(() => checkStored('p', '1.42'));
    assert.throws(() => checkStored('p', '3.1'), (e: Error) => e instanceof ProtocolVersionError && /p:protocol holds protocol version 3\.1.*1\.0/.test(e.message));
  });
});

describe('envelope', () => {
  const id = Buffer.from('task-1');
  const ring = new KeyRing('k1', { k1: Buffer.alloc(32, 3) });
  it('escapes a plain value that opens with 0xC1, and opens it back', () => {
    const c = new Codec({ compression: 'none', compressAbove: 512 });
    const w = c.wrap(Buffer.of(0xc1, 0xff), id, Use.Payload);
    assert.equal(w.toString('hex'), 'c100c1ff');
    assert.equal(c.open(w, id, Use.Payload).toString('hex'), 'c1ff');
  });
  it('binds a sealed value to its task, its use and its flags', () => {
    const c = new Codec({ compression: 'none', compressAbove: 512, ring });
    const w = c.wrap(Buffer.from('secret'), id, Use.Result);
    assert.equal(c.open(w, id, Use.Result).toString(), 'secret');
    assert.throws(() => c.open(w, Buffer.from('task-2'), Use.Result), /does not authenticate/);
    assert.throws(() => c.open(w, id, Use.Payload), /does not authenticate/);
    const flipped = Buffer.from(w);
    flipped[1] = 0x06;
    assert.throws(() => c.open(flipped, id, Use.Result), EnvelopeError);
  });
  it('refuses what it must: corrupt flags, plaintext under a ring, an unknown key', () => {
    const c = new Codec({ compression: 'none', compressAbove: 512, ring });
    assert.throws(() => c.open(Buffer.of(0xc1, 0x07, 1, 2), id, Use.Payload), /flags 0x07/);
    assert.throws(() => new Codec({ compression: 'none', compressAbove: 512 }).open(Buffer.of(0xc1, 0x08), id, Use.Payload), /flags 0x08/);
    assert.throws(() => c.open(Buffer.from('plain'), id, Use.Payload), (e: Error) => e instanceof KeyRingError && /not encrypted/.test(e.message));
    assert.equal(new Codec({ compression: 'none', compressAbove: 512, ring, allowPlaintext: true }).open(Buffer.from('plain'), id, Use.Payload).toString(), 'plain');
    const other = new Codec({ compression: 'none', compressAbove: 512, ring: new KeyRing('k9', { k9: Buffer.alloc(32, 9) }) });
    assert.throws(() => other.open(c.wrap(Buffer.from('x'), id, Use.Payload), id, Use.Payload), /key "k1", which is not in the key ring/);
  });
});
