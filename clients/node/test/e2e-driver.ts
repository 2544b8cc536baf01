// The e2e driver of internal/crosslang/contract.md: `enqueue` enqueues
// the matrix's cases through this client and prints what it sent;
// `results` reads the tasks back through getTask. Run it with a Node
// that has zstd: node tools/node-zstd.mjs dist/test/e2e-driver.js <verb>.

import { readFileSync } from 'node:fs';
import { encode } from '@msgpack/msgpack';
import type { Redis } from 'ioredis';
import { Client, KeyRing, type EnqueuedTask, type Task } from '../src/index.js';

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (internal/crosslang/contract.md)`);
  return v;
}

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

const retention = 600_000;
const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');

/** A compressible payload of 4,096 bytes or more, varied enough that zstd codes its literals. */
function compressible(): Buffer {
  const rows = Array.from({ length: 80 }, (_, i) => ({ row: i, marker: 'XL-MARKER-COMPRESSED', note: `row ${i} of the compressed case, sent by the Node client` }));
  return Buffer.from(JSON.stringify(rows));
}

/** Counts writes to a connection's socket: one per round trip. */
function countWrites(conn: Redis): { n: number } {
  const counter = { n: 0 };
  const stream = (conn as unknown as { stream: { write: (...a: unknown[]) => boolean } }).stream;
  const write = stream.write.bind(stream);
  stream.write = (...a: unknown[]) => {
    counter.n++;
    return write(...a);
  };
  return counter;
}

async function enqueue(): Promise<void> {
  const url = env('SHARDQ_REDIS_URL');
  const prefix = env('SHARDQ_PREFIX');
  const queue = env('SHARDQ_QUEUE');
  const tag = env('SHARDQ_CASE_TAG');
  const ring = KeyRing.parse(readFileSync(env('SHARDQ_KEY_FILE')));
  const plain = new Client({ url, prefix });
  const small = new Client({ url, prefix, compression: 'small' });
  const sealed = new Client({ url, prefix, keyRing: ring });
  const tasks: { case: string; id: string; payload_base64: string }[] = [];
  const checks: Check[] = [];
  const add = (name: string, t: EnqueuedTask): void => {
    tasks.push({ case: name, id: t.id, payload_base64: b64(t.payload) });
  };
  const base = { type: 'echo', queue, retention } satisfies Partial<Task>;
  try {
    add('plain', await plain.enqueue({ ...base, payload: { case: 'plain', n: 1 } }));
    add('delayed', await plain.enqueue({ ...base, payload: { case: 'delayed' }, processIn: 1000 }));
    add('fair', await plain.enqueue({ ...base, payload: { case: 'fair' }, group: 'tenant-a' }));
    add('compressed', await small.enqueue({ ...base, payload: compressible() }));
    add('encrypted', await sealed.enqueue({ ...base, payload: Buffer.from(`node client: XL-MARKER-ENCRYPTED ${tag}`) }));

    const taskId = `dup-${tag}`;
    const first = await plain.enqueue({ ...base, taskId, payload: Buffer.from(`first ${tag}`) });
    const second = await plain.enqueue({ ...base, taskId, payload: Buffer.from(`second ${tag}`) });
    add('duplicate', first);
    const same = !first.duplicate && second.duplicate && second.id === first.id && second.payload.equals(first.payload);
    checks.push({
      name: 'duplicate id returns the original', ok: same,
      detail: `first: duplicate ${first.duplicate}, id ${first.id}; second: duplicate ${second.duplicate}, id ${second.id}, payload ${JSON.stringify(second.payload.toString())}`,
    });

    // the connection is warm (protocol record, registry, layout): one write is one round trip
    const writes = countWrites(plain.redis as Redis);
    const batch = await plain.enqueueMany([0, 1, 2].map((i) => ({ ...base, payload: { case: `batch-${i}`, i } })));
    checks.push({ name: 'enqueueMany is one round trip', ok: writes.n === 1, detail: `${writes.n} writes to the socket for 3 tasks` });
    batch.forEach((r, i) => {
      if (!r.ok) throw new Error(`batch-${i}: ${r.error.message}`);
      add(`batch-${i}`, r.task);
    });
  } finally {
    await Promise.all([plain.close(), small.close(), sealed.close()]);
  }
  process.stdout.write(JSON.stringify({ tasks, checks }) + '\n');
}

async function results(): Promise<void> {
  const input = JSON.parse(readFileSync(0, 'utf8')) as { ids?: unknown };
  if (!Array.isArray(input.ids)) throw new Error('results: stdin holds no {"ids": [...]}');
  const ring = KeyRing.parse(readFileSync(env('SHARDQ_KEY_FILE')));
  const c = new Client({ url: env('SHARDQ_REDIS_URL'), prefix: env('SHARDQ_PREFIX'), keyRing: ring, allowPlaintext: true });
  const out: Record<string, { state: string; result_base64: string }> = {};
  try {
    for (const id of input.ids as string[]) {
      const t = await c.getTask(env('SHARDQ_QUEUE'), id);
      if (t.malformed) throw new Error(`task ${id}: ${t.lastError}`);
      out[id] = { state: t.state, result_base64: b64(t.result ?? Buffer.alloc(0)) };
    }
  } finally {
    await c.close();
  }
  process.stdout.write(JSON.stringify({ tasks: out }) + '\n');
}

const verb = process.argv[2];
const run = verb === 'enqueue' ? enqueue : verb === 'results' ? results : undefined;
if (!run) {
  process.stderr.write(`usage: e2e-driver enqueue|results (got ${JSON.stringify(verb)})\n`);
  process.exit(2);
}
run().catch((e: unknown) => {
  process.stderr.write(`e2e-driver ${verb}: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});
