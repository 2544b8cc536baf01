// The golden vectors of testdata/protocol (docs/protocol.md, "Golden
// vectors"): this client makes every vector's stored IDs, partitions,
// envelopes, messages and script calls byte for byte, with the case's
// time, generated IDs and nonces; the calls give the vectors' replies on
// a private redis-server. S2 bodies this client cannot make are skipped
// with the reason; zstd bodies are compared decompressed where the bytes
// differ, as the spec allows.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import zlib from 'node:zlib';
import { pipeline, type Call } from '../src/calls.js';
import { Codec, hasZstd, Use, type Compression } from '../src/envelope.js';
import { enqueueCall, enqueueOneCall, type Group } from '../src/enqueue.js';
import { UnsupportedCodecError } from '../src/errors.js';
import { idTime, publicId, storedId } from '../src/ids.js';
import { KeyRing } from '../src/keyring.js';
import { tag } from '../src/keys.js';
import { decodeMessage } from '../src/message.js';
import { fnv1a32, RouteTable } from '../src/route.js';
import { enqueue, enqueueCapped, enqueueOne } from '../src/scripts.generated.js';
import { build, type Task } from '../src/task.js';
import { hex, readVectors, startRedis, type PrivateRedis } from './helpers.js';

interface VecTask {
  type: string; payload_b64: string; raw?: boolean; queue?: string; max_retry?: number; timeout_ms?: number;
  deadline_ms?: number; process_at_ms?: number; process_in_ms?: number; retention_ms?: number; unique_ttl_ms?: number;
  unique_by?: string; unique_until_finished?: boolean; unique_after_ms?: number; task_id?: string; group?: string;
  headers?: Record<string, string>;
}
interface VecArg { str?: string; hex?: string }
interface VecCall { script: string; when: string; partition: number; keys: string[]; argv: VecArg[]; reply: unknown; reply_again: unknown }
interface VecCase {
  name: string; about: string; now_ms: number; generated_ids?: string[]; nonces_hex?: string[];
  config: {
    prefix: string; partitions?: Record<string, number>; shard_size: number; feed_size: number; id_ttl_ms: number;
    compression: string; compress_above: number; full_messages?: boolean; dictionary?: unknown;
    key_ring?: { current: string; keys_b64: Record<string, string> };
  };
  tasks: VecTask[];
  expect: {
    tasks: { public_id: string; stored_id_hex: string; route_key_hex: string | null; partition: number; tag: string;
      uniqueness_id?: string; envelope_hex: string; form: string; message_hex: string }[];
    calls: VecCall[];
  };
}

const argBytes = (a: VecArg): Buffer => (a.str !== undefined ? Buffer.from(a.str, 'utf8') : Buffer.from(a.hex!, 'hex'));
const enqueueCases = readVectors<VecCase>('enqueue.json').cases;
const scripts: Record<string, typeof enqueue> = { enqueue, enqueue_capped: enqueueCapped, enqueue_one: enqueueOne };

function ringOf(vc: VecCase): KeyRing | undefined {
  const r = vc.config.key_ring;
  if (!r) return undefined;
  return new KeyRing(r.current, new Map(Object.entries(r.keys_b64).map(([id, k]) => [id, Buffer.from(k, 'base64')])));
}

/** Why this client cannot make the case's bytes, or '' when it can. */
function skipReason(vc: VecCase): string {
  if (vc.config.dictionary) return 'S2 against a dictionary (envelope 0x03): the Node client does not write S2';
  const s2 = vc.expect.tasks.some((t) => t.envelope_hex.startsWith('c101') || t.envelope_hex.startsWith('c105'));
  if (s2) return 'an S2 body (envelope 0x01/0x05): the Node client does not write S2';
  if (vc.config.compression === 'small' && !hasZstd()) return `zstd needs Node >= 22.15 (this is ${process.version})`;
  return '';
}

/** The case's compression as this client does it: "fast" that compresses nothing is "none". */
function compressionOf(vc: VecCase): Compression {
  return vc.config.compression === 'small' ? 'small' : 'none';
}

function taskOf(vt: VecTask): Task {
  const t: Task = { type: vt.type, payload: Buffer.from(vt.payload_b64, 'base64'), raw: vt.raw ?? false };
  if (vt.queue) t.queue = vt.queue;
  if (vt.max_retry !== undefined) t.maxRetry = vt.max_retry === 9223372036854775807 ? Infinity : vt.max_retry;
  if (vt.timeout_ms) t.timeout = vt.timeout_ms;
  if (vt.deadline_ms) t.deadline = vt.deadline_ms;
  if (vt.process_at_ms) t.processAt = vt.process_at_ms;
  if (vt.process_in_ms) t.processIn = vt.process_in_ms;
  if (vt.retention_ms) t.retention = vt.retention_ms;
  if (vt.unique_by) t.uniqueBy = vt.unique_by;
  if (vt.unique_ttl_ms) t.unique = vt.unique_ttl_ms;
  if (vt.unique_until_finished) t.uniqueUntilFinished = vt.unique_after_ms ?? 0;
  if (vt.task_id) t.taskId = vt.task_id;
  if (vt.group) t.group = vt.group;
  if (vt.headers) t.headers = vt.headers;
  return t;
}

/** Builds the case as a fresh client would, returning its tasks and its calls in the vector's order. */
function make(vc: VecCase) {
  const ids = [...(vc.generated_ids ?? [])];
  const nonces = Buffer.from((vc.nonces_hex ?? []).join(''), 'hex');
  let used = 0;
  const codec = new Codec({
    compression: compressionOf(vc), compressAbove: vc.config.compress_above, ring: ringOf(vc),
    nonce: (b) => {
      assert.ok(used + b.length <= nonces.length, `${vc.name}: more nonces needed than the vector gives`);
      nonces.copy(b, 0, used, used + b.length);
      used += b.length;
    },
  });
  const settings = { codec, fullMessages: vc.config.full_messages ?? false, maxPayloadSize: 1 << 20, idTtlMs: vc.config.id_ttl_ms };
  const built = vc.tasks.map((vt, i) => build(taskOf(vt), i, settings, vc.now_ms, () => {
    const id = ids.shift();
    assert.ok(id, `${vc.name}: more generated IDs needed than the vector gives`);
    return storedId(id);
  }));
  const routes = new RouteTable(vc.config.partitions ?? {});
  const groups: Group[] = [];
  for (const t of built) {
    t.partition = routes.pick(t.queue, t.route);
    const T = tag(vc.config.prefix, t.queue, t.partition);
    let g = groups.find((x) => x.T === T);
    if (!g) groups.push((g = { queue: t.queue, partition: t.partition, T, tasks: [] }));
    g.tasks.push(t);
  }
  const limits = { shardSize: vc.config.shard_size, feedSize: vc.config.feed_size };
  const calls: { script: string; partition: number; call: Call & { kind: 'script' } }[] = [];
  for (const g of groups) {
    for (const capped of [false, true]) {
      calls.push({ script: capped ? 'enqueue_capped' : 'enqueue', partition: g.partition, call: enqueueCall(g, limits, capped, routes.count(g.queue)) });
    }
    if (built.length === 1 && g.tasks.length === 1 && g.tasks[0]!.at === 0 && g.tasks[0]!.in === 0 && g.tasks[0]!.unique === '' && g.tasks[0]!.idClaim === 0) {
      calls.push({ script: 'enqueue_one', partition: g.partition, call: enqueueOneCall(g.T, g.tasks[0]!, limits, -1) });
    }
  }
  return { built, calls };
}

/** The zstd frame of a c1 02 envelope (or the plaintext of c1 06) decompressed. */
function unzstd(body: Uint8Array): Buffer {
  return (zlib as unknown as { zstdDecompressSync(b: Buffer): Buffer }).zstdDecompressSync(Buffer.concat([Buffer.of(0x28, 0xb5, 0x2f, 0xfd), body]));
}

/** Compares a message this client made with the vector's: byte for byte, or, for a zstd envelope that differs, the head and the decompressed body. */
function sameMessage(got: Buffer, want: Buffer, wantEnvelope: Buffer, what: string): void {
  if (got.equals(want)) return;
  assert.ok(wantEnvelope.subarray(0, 2).equals(Buffer.of(0xc1, 0x02)), `${what}: message differs\n got ${hex(got)}\nwant ${hex(want)}`);
  const headLen = want.length - wantEnvelope.length;
  assert.equal(want[0], 0x91 === want[0] || 0x92 === want[0] ? want[0] : -1, `${what}: a zstd envelope in a full message; compare it by hand`);
  assert.equal(hex(got.subarray(0, headLen)), hex(want.subarray(0, headLen)), `${what}: the head before the payload`);
  assert.equal(hex(unzstd(got.subarray(headLen + 2))), hex(unzstd(wantEnvelope.subarray(2))), `${what}: the decompressed payload`);
}

describe('golden vectors: partitions.json', () => {
  for (const c of readVectors<{ key_hex: string; key?: string; fnv1a32: number; partitions: number; partition: number }>('partitions.json').cases) {
    it(`${c.key ?? c.key_hex} over ${c.partitions}`, () => {
      const key = Buffer.from(c.key_hex, 'hex');
      if (c.key !== undefined) assert.equal(hex(Buffer.from(c.key, 'utf8')), c.key_hex);
      assert.equal(fnv1a32(key), c.fnv1a32);
      assert.equal(new RouteTable({ q: c.partitions }).pick('q', key), c.partition);
    });
  }
});

describe('golden vectors: ids.json', () => {
  for (const c of readVectors<{ public: string; stored_hex: string; enqueued_at_ms: number | null }>('ids.json').cases) {
    it(c.public, () => {
      assert.equal(hex(storedId(c.public)), c.stored_hex);
      assert.equal(publicId(Buffer.from(c.stored_hex, 'hex')), c.public);
      assert.equal(idTime(Buffer.from(c.stored_hex, 'hex')) ?? null, c.enqueued_at_ms);
    });
  }
});

describe('golden vectors: enqueue.json, as this client makes them', () => {
  assert.ok(enqueueCases.length >= 20, `enqueue.json holds ${enqueueCases.length} cases`);
  for (const vc of enqueueCases) {
    const reason = skipReason(vc);
    it(vc.name, reason ? { skip: reason } : {}, () => {
      const { built, calls } = make(vc);
      vc.expect.tasks.forEach((want, i) => {
        const t = built[i]!;
        const what = `${vc.name} task ${i}`;
        assert.equal(t.info.id, want.public_id, `${what}: public ID`);
        assert.equal(hex(t.id), want.stored_id_hex, `${what}: stored ID`);
        assert.equal(t.route === null ? null : hex(t.route), want.route_key_hex, `${what}: route key`);
        assert.equal(t.partition, want.partition, `${what}: partition`);
        assert.equal(tag(vc.config.prefix, t.queue, t.partition), want.tag, `${what}: tag`);
        assert.equal(t.unique, want.uniqueness_id ?? '', `${what}: uniqueness ID`);
        assert.equal(t.msg[0] === 0x91 || t.msg[0] === 0x92 ? 'compact' : 'full', want.form, `${what}: form`);
        sameMessage(t.msg, Buffer.from(want.message_hex, 'hex'), Buffer.from(want.envelope_hex, 'hex'), what);
      });
      assert.deepEqual(calls.map((c) => `${c.script}@${c.partition}`), vc.expect.calls.map((c) => `${c.script}@${c.partition}`), 'the calls');
      calls.forEach(({ call }, i) => {
        const want = vc.expect.calls[i]!;
        assert.equal(call.script.name, want.script);
        assert.deepEqual(call.keys, want.keys, `${want.script}: KEYS`);
        assert.equal(call.args.length, want.argv.length, `${want.script}: ARGV count`);
        call.args.forEach((a, j) => {
          const got = Buffer.isBuffer(a) ? a : Buffer.from(String(a), 'utf8');
          const w = argBytes(want.argv[j]!);
          const msgIndex = vc.expect.tasks.findIndex((t) => t.message_hex === hex(w));
          if (msgIndex >= 0) sameMessage(got, w, Buffer.from(vc.expect.tasks[msgIndex]!.envelope_hex, 'hex'), `${want.script} ARGV[${j + 1}]`);
          else assert.equal(hex(got), hex(w), `${want.script} ARGV[${j + 1}]`);
        });
      });
    });
  }
});

describe('golden vectors: enqueue.json, read back', () => {
  for (const vc of enqueueCases) {
    it(vc.name, () => {
      const codec = new Codec({ compression: 'none', compressAbove: 512, ring: ringOf(vc) });
      vc.expect.tasks.forEach((want, i) => {
        const m = decodeMessage(Buffer.from(want.message_hex, 'hex'));
        assert.equal(hex(m.id), want.stored_id_hex);
        assert.equal(m.type, vc.tasks[i]!.type);
        assert.equal(m.group, vc.tasks[i]!.group ?? '');
        assert.equal(hex(m.payload), want.envelope_hex);
        const env = Buffer.from(want.envelope_hex, 'hex');
        const s2 = env[0] === 0xc1 && [0x01, 0x03, 0x05].includes(env[1]!);
        if (s2) {
          assert.throws(() => codec.open(env, m.id, Use.Payload), (e: Error) => e instanceof UnsupportedCodecError && /S2/.test(e.message));
          return;
        }
        if (env[0] === 0xc1 && (env[1]! & 3) === 2 && !hasZstd()) return;
        assert.equal(hex(codec.open(env, m.id, Use.Payload)), hex(Buffer.from(vc.tasks[i]!.payload_b64, 'base64')));
      });
    });
  }
});

describe('golden vectors: the calls on a private redis-server', () => {
  let redis: PrivateRedis;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });
  for (const vc of enqueueCases) {
    it(vc.name, async () => {
      const conn = redis.connect();
      // the vector's own calls, so every case's replies are checked,
      // those this client cannot make (S2) among them
      for (const c of vc.expect.calls) {
        await conn.flushdb();
        const call: Call = { kind: 'script', script: scripts[c.script]!, keys: c.keys, args: c.argv.map(argBytes) };
        const [first] = await pipeline(conn, [call]);
        const [again] = await pipeline(conn, [call]);
        assert.equal(first!.err, undefined);
        assert.deepEqual(first!.value, c.reply, `${c.script}: reply`);
        assert.deepEqual(again!.value, c.reply_again, `${c.script}: reply_again`);
      }
      conn.disconnect();
    });
  }
});
