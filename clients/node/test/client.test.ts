// The Client on a private redis-server: what it writes and refuses.

import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { encode } from '@msgpack/msgpack';
import { Client } from '../src/client.js';
import { hasZstd } from '../src/envelope.js';
import { ProtocolVersionError, ValidationError } from '../src/errors.js';
import { KeyRing } from '../src/keyring.js';
import { decodeMessage } from '../src/message.js';
import { pick } from '../src/route.js';
import { startRedis, type PrivateRedis } from './helpers.js';

let redis: PrivateRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

/** Counts the writes to the connection's socket: one per round trip (a command, or a pipeline). */
async function countWrites(conn: Redis): Promise<{ n: number }> {
  await conn.ping();
  const counter = { n: 0 };
  const stream = (conn as unknown as { stream: { write: (...a: unknown[]) => boolean } }).stream;
  const write = stream.write.bind(stream);
  stream.write = (...a: unknown[]) => {
    counter.n++;
    return write(...a);
  };
  return counter;
}

async function commandCalls(conn: Redis, cmd: string): Promise<number> {
  const info = await conn.info('commandstats');
  const m = new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(info);
  return m ? Number(m[1]) : 0;
}

const ring = () => new KeyRing('k2', { k1: Buffer.alloc(32, 1), k2: Buffer.alloc(32, 2) });

describe('protocol version', () => {
  it('records 1.0 before the first write, and proceeds under 1.x', async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 'pv1' });
    await c.enqueue({ type: 'a' });
    assert.equal(await conn.get('pv1:protocol'), '1.0');
    await conn.set('pv2:protocol', '1.7');
    await new Client({ redis: conn, prefix: 'pv2' }).enqueue({ type: 'a' });
    assert.equal(await conn.get('pv2:protocol'), '1.7');
  });

  for (const [stored, pattern] of [['2.0', /holds protocol version 2\.0, another major than this client's 1\.0/], ['abc', /holds "abc", not a protocol version/], ['0.9', /not a protocol version/]] as const) {
    it(`refuses a stored ${stored}, naming both versions and the key, and writes nothing`, async () => {
      const conn = redis.connect();
      const prefix = `pvx${stored.replace('.', '')}`;
      await conn.set(`${prefix}:protocol`, stored);
      const c = new Client({ redis: conn, prefix });
      await assert.rejects(c.enqueue({ type: 'a' }), (e: Error) => {
        assert.ok(e instanceof ProtocolVersionError, String(e));
        assert.match(e.message, pattern);
        assert.match(e.message, new RegExp(`${prefix}:protocol`));
        assert.equal(e.stored, stored);
        assert.equal(e.ours, '1.0');
        return true;
      });
      await assert.rejects(c.enqueueMany([{ type: 'a' }]), ProtocolVersionError);
      assert.deepEqual(await conn.keys(`${prefix}*`), [`${prefix}:protocol`]);
      assert.deepEqual(await conn.keys(`{${prefix}*`), []);
    });
  }
});

describe('running workers', () => {
  it('refuses while a 0.1.0 worker runs, naming it, and goes on once it stopped', async () => {
    const conn = redis.connect();
    const [secs, micros] = await conn.time();
    const now = Number(secs) * 1000 + Math.floor(Number(micros) / 1000);
    const worker = async (id: string, beat: number, v?: string) => {
      await conn.zadd('ow:workers', beat, id);
      await conn.hset('ow:workers:status', id, Buffer.from(encode(v === undefined ? { h: `h-${id}`, p: 7 } : { h: `h-${id}`, p: 7, v })));
    };
    await worker('new', now, '1.0');
    await worker('gone', now - 120_000); // its heartbeat stopped two minutes ago
    await new Client({ redis: conn, prefix: 'ow' }).enqueue({ type: 'a' });
    await worker('old', now); // a 0.1.0 worker: no version in its status
    const c = new Client({ redis: conn, prefix: 'ow' });
    await assert.rejects(c.enqueue({ type: 'a' }), (e: Error) => {
      assert.ok(e instanceof ProtocolVersionError, String(e));
      for (const want of ['protocol 1.0', 'old (h-old, pid 7)', 'shardq 0.1.0', 'upgrade the workers first']) assert.ok(e.message.includes(want), e.message);
      assert.ok(!e.message.includes('gone'), e.message);
      return true;
    });
    await conn.hdel('ow:workers:status', 'old'); // it stopped
    await c.enqueue({ type: 'a' });
  });
});

describe('enqueue and read back', () => {
  it('carries every option to the message and reads it back', async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 'opt', partitions: { mail: 4 } });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const deadline = Date.now() + 3_600_000;
    const t = await c.enqueue({
      type: 'email:send', queue: 'mail', payload: { to: 'a@b.com' }, maxRetry: 3, timeout: 30_000, deadline, retention: 600_000,
      group: 'tenant-7', headers: { traceparent, tenant: 'acme' },
    });
    assert.equal(t.partition, pick(Buffer.from('tenant-7'), 4));
    const got = await c.getTask('mail', t.id);
    assert.equal(got.id, t.id);
    assert.equal(got.partition, t.partition);
    assert.equal(got.state, 'pending');
    assert.equal(got.maxRetry, 3);
    assert.equal(got.timeout, 30_000);
    assert.equal(got.deadline, deadline);
    assert.equal(got.retention, 600_000);
    assert.equal(got.group, 'tenant-7');
    assert.deepEqual(got.headers, { tenant: 'acme', traceparent });
    assert.equal(got.raw, false);
    assert.deepEqual(got.payload, Buffer.from('81a2746fa76140622e636f6d', 'hex'));
    assert.ok(Math.abs(got.enqueuedAt! - Date.now()) < 10_000);
    assert.equal(await conn.hget('opt:queues', 'mail'), '4');
  });

  it('writes maxRetry Infinity as 2^63-1 and reads it back as Infinity', async () => {
    const c = new Client({ redis: redis.connect(), prefix: 'inf' });
    const t = await c.enqueue({ type: 'forever', maxRetry: Infinity, taskId: 'forever-1' });
    assert.equal((await c.getTask('default', t.id)).maxRetry, Infinity);
  });

  it('delays by processIn and processAt: scheduled', async () => {
    const c = new Client({ redis: redis.connect(), prefix: 'delay' });
    const a = await c.enqueue({ type: 'later', processIn: 5000 });
    const b = await c.enqueue({ type: 'later', processAt: new Date(Date.now() + 60_000) });
    const n = await c.enqueue({ type: 'now', processAt: Date.now() - 1000 });
    assert.equal(a.state, 'scheduled');
    assert.equal(b.state, 'scheduled');
    assert.equal(n.state, 'pending');
    assert.equal((await c.getTask('default', a.id)).state, 'scheduled');
  });

  it('returns the original task for a duplicate taskId, with duplicate true', async () => {
    const c = new Client({ redis: redis.connect(), prefix: 'dup', partitions: { q: 8 } });
    const first = await c.enqueue({ type: 'order:ship', queue: 'q', taskId: 'order-42', payload: Buffer.from('first'), retention: 60_000 });
    assert.equal(first.duplicate, false);
    const again = await c.enqueue({ type: 'order:ship', queue: 'q', taskId: 'order-42', payload: Buffer.from('second') });
    assert.equal(again.duplicate, true);
    assert.equal(again.id, 'order-42');
    assert.equal(again.partition, first.partition);
    assert.equal(again.payload.toString(), 'first');
    const many = await c.enqueueMany([{ type: 'x', queue: 'q', taskId: 'order-42' }, { type: 'x', queue: 'q', taskId: 'order-43' }]);
    assert.ok(many[0]!.ok && many[0]!.task.duplicate && many[0]!.task.payload.toString() === 'first');
    assert.ok(many[1]!.ok && !many[1]!.task.duplicate);
  });

  it('answers a duplicate whose task is gone (finished, not kept) with its ID, queue and partition alone', async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 'gone' });
    await c.enqueue({ type: 'x', taskId: 'gone-1', payload: Buffer.from('first') });
    await conn.del('{gone:default:0}:feed', '{gone:default:0}:feed:msg', '{gone:default:0}:s:0'); // as if it ran and was deleted
    const again = await c.enqueue({ type: 'x', taskId: 'gone-1', payload: Buffer.from('second') });
    assert.deepEqual([again.duplicate, again.id, again.queue, again.partition, again.state, again.payload.length], [true, 'gone-1', 'default', 0, '', 0]);
  });

  it('refuses a second unique task with DuplicateUniqueError', async () => {
    const c = new Client({ redis: redis.connect(), prefix: 'uniq' });
    await c.enqueue({ type: 'report', payload: { day: 1 }, unique: 60_000 });
    await assert.rejects(c.enqueue({ type: 'report', payload: { day: 1 }, unique: 60_000 }), (e: Error) => e.name === 'DuplicateUniqueError' && /report:[0-9a-f]{40}/.test(e.message));
    await c.enqueue({ type: 'report', payload: { day: 2 }, unique: 60_000 });
    await c.enqueue({ type: 'r', uniqueBy: 'order-9', uniqueUntilFinished: 0 });
    await assert.rejects(c.enqueue({ type: 'r', uniqueBy: 'order-9', unique: 1000 }), { name: 'DuplicateUniqueError' });
  });
});

describe('limits', () => {
  it('refuses a task past MaxDepth with QueueFullError (enqueue_capped)', async () => {
    const conn = redis.connect();
    await conn.hset('{full:default:0}:limits', 'maxdepth', '1');
    const c = new Client({ redis: conn, prefix: 'full' });
    await c.enqueue({ type: 'a' });
    await assert.rejects(c.enqueue({ type: 'a' }), { name: 'QueueFullError', message: /"default" has MaxDepth 1/ });
  });
});

describe('enqueueMany', () => {
  it('is one round trip and one script call for tasks of one partition', async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 'batch' });
    await c.enqueue({ type: 'warm-up' }); // the protocol record, the registry entry, the layout
    const writes = await countWrites(conn);
    const before = (await commandCalls(conn, 'evalsha')) + (await commandCalls(conn, 'eval'));
    writes.n = 0;
    const res = await c.enqueueMany([{ type: 'a', payload: 1 }, { type: 'b', payload: 2, group: 'g' }, { type: 'c', payload: 3, processIn: 1000 }]);
    assert.equal(writes.n, 1, 'socket writes for one enqueueMany');
    assert.deepEqual(res.map((r) => r.ok && r.task.state), ['pending', 'pending', 'scheduled']);
    const after = (await commandCalls(conn, 'evalsha')) + (await commandCalls(conn, 'eval'));
    assert.equal(after - before, 1, 'script calls');
  });

  it('spreads over partitions in one round trip, a call per partition', async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 'spread', partitions: { q: 4 } });
    await c.enqueue({ type: 'warm-up', queue: 'q' });
    const writes = await countWrites(conn);
    writes.n = 0;
    const res = await c.enqueueMany(Array.from({ length: 8 }, (_, i) => ({ type: 't', queue: 'q', payload: i })));
    assert.equal(writes.n, 1);
    assert.deepEqual(new Set(res.map((r) => r.ok && r.task.partition)), new Set([0, 1, 2, 3]));
  });

  it('fails an invalid task alone', async () => {
    const c = new Client({ redis: redis.connect(), prefix: 'partial' });
    const res = await c.enqueueMany([{ type: 'ok' }, { type: 'bad{type}' }, { type: 'ok', queue: '' }]);
    assert.equal(res[0]!.ok, true);
    assert.ok(!res[1]!.ok && res[1]!.error instanceof ValidationError && /"bad\{type\}"/.test(res[1]!.error.message));
    assert.ok(!res[2]!.ok && /queue ""/.test(res[2]!.error.message));
  });

  it('recovers NOSCRIPT inside a pipeline', async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 'nos', partitions: { q: 2 } });
    await c.enqueue({ type: 'warm-up', queue: 'q' });
    await conn.script('FLUSH');
    const res = await c.enqueueMany([{ type: 'a', queue: 'q' }, { type: 'b', queue: 'q' }]);
    assert.ok(res.every((r) => r.ok));
  });
});

describe('routing', () => {
  it('reads the layout before routing a queue configured with several partitions', async () => {
    const conn = redis.connect();
    await conn.hset('lay:layout', 'q', '2/2');
    const c = new Client({ redis: conn, prefix: 'lay', partitions: { q: 8 } });
    const res = await c.enqueueMany(Array.from({ length: 12 }, (_, i) => ({ type: 't', queue: 'q', group: `g${i}` })));
    for (const r of res) assert.ok(r.ok && r.task.partition < 2, JSON.stringify(r.ok && r.task.partition));
    assert.equal(await conn.hget('lay:queues', 'q'), '2');
  });

  it('starts round-robin at partition 1', async () => {
    const c = new Client({ redis: redis.connect(), prefix: 'rr', partitions: { q: 4 } });
    assert.deepEqual([(await c.enqueue({ type: 't', queue: 'q' })).partition, (await c.enqueue({ type: 't', queue: 'q' })).partition], [1, 2]);
  });

  it('routes again a task a closed partition refused', async () => {
    const conn = redis.connect();
    await conn.hset('cl:layout', 'q', '2/2');
    const c = new Client({ redis: conn, prefix: 'cl', partitions: { q: 2 } });
    await c.enqueue({ type: 'warm-up', queue: 'q' });
    const group = ['a', 'b', 'c', 'd', 'e'].find((g) => pick(Buffer.from(g), 2) === 1)!;
    // an operator lowers the count: partition 1 closes, the layout says 1/2
    await conn.set('{cl:q:1}:feed:rank', 'closed:0');
    await conn.hset('cl:layout', 'q', '1/2');
    const t = await c.enqueue({ type: 't', queue: 'q', group });
    assert.equal(t.partition, 0);
    assert.equal((await c.getTask('q', t.id)).partition, 0);
  });

  it('takes enqueue_one for a single plain task once the queue is known', async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 'one' });
    await c.enqueue({ type: 'warm-up' });
    await new Promise((r) => setTimeout(r, 1100)); // past the depth cache's first answer
    await c.enqueue({ type: 'a' });
    const writes = await countWrites(conn);
    writes.n = 0;
    for (let i = 0; i < 5; i++) await c.enqueue({ type: 'b', payload: i });
    assert.equal(writes.n, 5);
    const shard = await conn.lrange('{one:default:0}:s:0', 0, -1);
    assert.equal(shard.length, 7);
  });
});

describe('validation', () => {
  const c = new Client({ url: 'redis://127.0.0.1:1/0', prefix: 'never' }); // never connected: nothing is sent before validation
  after(() => c.redis.disconnect());
  const cases: [string, Parameters<Client['enqueue']>[0], RegExp][] = [
    ['an empty type', { type: '' }, /task type "": empty/],
    ['a type of 129 bytes', { type: 'x'.repeat(129) }, /129 bytes, at most 128/],
    ['a type of 64 two-byte characters is 128 bytes: fine', { type: 'é'.repeat(65) }, /130 bytes/],
    ['a brace in a queue', { type: 't', queue: 'a{b' }, /queue "a\{b": contains "\{"/],
    ['white space in a group', { type: 't', group: 'a b' }, /group "a b": contains white space.*U\+0020/],
    ['a no-break space', { type: 't', group: 'a\u00a0b' }, /U\+00A0/],
    ['a control character', { type: 't\u0007' }, /U\+0007/],
    ['a lone surrogate', { type: 't\ud800' }, /not valid UTF-8/],
    ['a task ID with a tab', { type: 't', taskId: 'a\tb' }, /task ID "a\\tb"/],
    ['a header key with a newline', { type: 't', headers: { 'a\nb': 'v' } }, /header key "a\\nb"/],
    ['headers over 4096 bytes', { type: 't', headers: { k: 'v'.repeat(4096) } }, /headers of 4097 bytes, at most 4096/],
    ['a negative maxRetry', { type: 't', maxRetry: -1 }, /maxRetry -1/],
    ['a zero timeout', { type: 't', timeout: 0 }, /timeout 0: want >= 1 ms/],
    ['a fractional delay', { type: 't', processIn: 1.5 }, /processIn 1.5/],
    ['uniqueBy without a ttl', { type: 't', uniqueBy: 'x' }, /uniqueBy "x": give unique/],
    ['uniqueBy of 129 bytes', { type: 't', uniqueBy: 'u'.repeat(129), unique: 10 }, /want 1 to 128 bytes/],
    ['both delays', { type: 't', processIn: 1, processAt: 1 }, /not both/],
    ['a raw object', { type: 't', payload: { a: 1 }, raw: true }, /raw payload is object/],
  ];
  for (const [name, task, pattern] of cases) {
    it(`refuses ${name}`, async () => {
      await assert.rejects(c.enqueue(task), (e: Error) => e instanceof ValidationError && pattern.test(e.message));
    });
  }
  it('accepts a name of 128 bytes and UniqueBy with white space (quirk 9)', () => {
    assert.doesNotThrow(() => new Client({ prefix: 'é'.repeat(64), url: 'redis://127.0.0.1:1/0', redis: undefined }).redis.disconnect());
  });
  it('refuses a payload over maxPayloadSize', async () => {
    const small = new Client({ url: 'redis://127.0.0.1:1/0', maxPayloadSize: 10 });
    await assert.rejects(small.enqueue({ type: 't', payload: Buffer.alloc(11) }), { name: 'PayloadTooLargeError', message: /payload is 11 bytes, limit 10/ });
    small.redis.disconnect();
  });
  it('refuses bad options of the client', () => {
    assert.throws(() => new Client({}), /give url .* or redis/);
    assert.throws(() => new Client({ prefix: 'a b' }), /prefix "a b"/);
    assert.throws(() => new Client({ partitions: { q: 1025 } }), /partitions of "q" 1025/);
    assert.throws(() => new Client({ shardSize: 7001 }), /shardSize 7001/);
    assert.throws(() => new Client({ compression: 'fast' }), /"fast" \(S2\) is not supported/);
    assert.throws(() => new Client({ compression: 'lz4' as 'none' }), /unknown compression "lz4"/);
  });
});

describe('key ring', () => {
  const k1 = Buffer.alloc(32, 7).toString('base64');
  it('parses the JSON form of Go ParseKeyRing', () => {
    const r = KeyRing.parse(JSON.stringify({ current: 'k1', keys: { k1, k0: Buffer.alloc(32).toString('base64') } }));
    assert.equal(r.current, 'k1');
    assert.deepEqual(r.ids(), ['k0', 'k1']);
  });
  for (const [name, json, pattern] of [
    ['a typo', `{"curent": "k1", "keys": {"k1": "${k1}"}}`, /unknown field "curent"/],
    ['no current', `{"keys": {"k1": "${k1}"}}`, /no current key ID/],
    ['a current not among the keys', `{"current": "k9", "keys": {"k1": "${k1}"}}`, /current key "k9" is not among its keys/],
    ['a short key', `{"current": "k1", "keys": {"k1": "${Buffer.alloc(16, 9).toString('base64')}"}}`, /key "k1" is 16 bytes, want 32/],
    ['URL base64', `{"current": "k1", "keys": {"k1": "${Buffer.alloc(32, 0xfb).toString('base64url')}"}}`, /not standard base64/],
    ['broken JSON', `{"current": "k1", "keys": {"k1": "${k1}"`, /not valid JSON/],
    ['a key ID of 256 bytes', `{"current": "${'i'.repeat(256)}", "keys": {"${'i'.repeat(256)}": "${k1}"}}`, /256 bytes, want 1 to 255/],
  ] as const) {
    it(`refuses ${name}, without quoting a key`, () => {
      assert.throws(() => KeyRing.parse(json), (e: Error) => e.name === 'KeyRingError' && pattern.test(e.message) && !e.message.includes(k1.slice(0, 12)));
    });
  }
  it('shows no key in toString, inspect or JSON, nor does the client', () => {
    const secret = Buffer.alloc(32, 0xab);
    const r = new KeyRing('k1', { k1: secret });
    const c = new Client({ url: 'redis://127.0.0.1:1/0', keyRing: r });
    c.redis.disconnect();
    for (const s of [String(r), inspect(r), JSON.stringify(r), inspect(c, { depth: 10 }), JSON.stringify(c), inspect({ r }, { depth: 10, showHidden: true })]) {
      assert.ok(!s.includes(secret.toString('base64')) && !s.includes(secret.toString('hex')) && !s.includes('171, 171'), s);
    }
  });

  it('encrypts every payload, and getTask opens it and the result', async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 'enc', keyRing: ring() });
    const t = await c.enqueue({ type: 'secret', payload: Buffer.from('XL-MARKER-ENCRYPTED'), taskId: 'enc-1', retention: 60_000 });
    const stored = await conn.hgetBuffer('{enc:default:0}:feed:msg', Buffer.from('enc-1'));
    const all = Buffer.concat((await conn.lrangeBuffer('{enc:default:0}:s:0', 0, -1)).concat(stored ? [stored] : []));
    assert.ok(!all.includes('XL-MARKER-ENCRYPTED') && all.length > 0);
    const got = await c.getTask('default', t.id);
    assert.equal(got.payload.toString(), 'XL-MARKER-ENCRYPTED');
    assert.equal(got.encryptedWith, 'k2');
    const other = new Client({ redis: conn, prefix: 'enc', keyRing: new KeyRing('k9', { k9: Buffer.alloc(32, 9) }) });
    const redacted = await other.getTask('default', t.id);
    assert.equal(redacted.redacted, true);
    assert.equal(redacted.payload.length, 0);
    const plain = new Client({ redis: conn, prefix: 'enc' });
    assert.equal((await plain.getTask('default', t.id)).redacted, true);
  });
});

describe('compression', () => {
  it('zstd ("small"): stored compressed, read back', { skip: hasZstd() ? false : `Node ${process.version} has no zstd` }, async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 'zs', compression: 'small' });
    // varied enough that zstd codes its literals, so the marker is not in clear
    const payload = Buffer.from(JSON.stringify(Array.from({ length: 60 }, (_, i) => ({ i, note: 'XL-MARKER-COMPRESSED', text: `the quick brown fox jumps over the lazy dog ${i}` }))));
    const t = await c.enqueue({ type: 'big', payload });
    const [msg] = await conn.lrangeBuffer('{zs:default:0}:s:0', 0, -1);
    const m = decodeMessage(msg!);
    assert.deepEqual([...m.payload.subarray(0, 2)], [0xc1, 0x02]);
    assert.ok(m.payload.length < payload.length / 4 && !msg!.includes('XL-MARKER-COMPRESSED'), `${m.payload.length} bytes`);
    assert.deepEqual((await c.getTask('default', t.id)).payload, payload);
    const small = await c.enqueue({ type: 'small', payload: Buffer.from('tiny') });
    assert.equal((await c.getTask('default', small.id)).payload.toString(), 'tiny');
  });

  it('says which codec it cannot read: S2', async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 's2' });
    const t = await c.enqueue({ type: 'x', payload: Buffer.from('x'), taskId: 's2-task', retention: 1000 });
    // a Go worker's S2 result (c1 01: an S2 block of "hi")
    await conn.hset('{s2:default:0}:result', 's2-task', Buffer.from('c10102086869', 'hex'));
    const got = await c.getTask('default', t.id);
    assert.equal(got.result, undefined);
    assert.match(got.lastError, /S2-compressed value \(envelope codec 0x01\)/);
  });
});
