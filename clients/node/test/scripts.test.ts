// The vendored scripts: their SHA-1 is scripts.json's, the generated file
// is what tools/gen-scripts.mjs makes from lua/ now, and get_task.lua
// (which scripts.json does not list) runs.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Client } from '../src/client.js';
import * as generated from '../src/scripts.generated.js';
import { repoRoot, readVectors, startRedis, type PrivateRedis } from './helpers.js';

const byName: Record<string, generated.ScriptSource> = {
  enqueue: generated.enqueue, enqueue_capped: generated.enqueueCapped, enqueue_one: generated.enqueueOne, get_task: generated.getTask,
};

describe('vendored scripts', () => {
  for (const c of readVectors<{ name: string; file: string; sha1: string; bytes: number }>('scripts.json').cases) {
    it(`${c.name}: the SHA-1 and length of scripts.json`, () => {
      const s = byName[c.name];
      assert.ok(s, `scripts.json names ${c.name}, which the client does not vendor`);
      assert.equal(createHash('sha1').update(s.source, 'utf8').digest('hex'), c.sha1);
      assert.equal(s.sha1, c.sha1);
      assert.equal(Buffer.byteLength(s.source, 'utf8'), c.bytes);
    });
  }

  it('src/scripts.generated.ts is what tools/gen-scripts.mjs makes from lua/ (npm run gen:scripts)', async () => {
    const tool = join(repoRoot, 'clients', 'node', 'tools', 'gen-scripts.mjs');
    const gen = (await import(pathToFileURL(tool).href)) as { generate(): string };
    const committed = readFileSync(join(repoRoot, 'clients', 'node', 'src', 'scripts.generated.ts'), 'utf8');
    assert.ok(gen.generate() === committed, 'a script under lua/ changed: run npm run gen:scripts in clients/node');
  });

  it('every script is resolved (no include directive left)', () => {
    for (const s of Object.values(byName)) {
      assert.doesNotMatch(s.source, /^\s*--@(include|script) /m, s.name);
      assert.ok(existsSync(join(repoRoot, 'lua', 'engine', `${s.name}.lua`)), s.name);
    }
  });
});

describe('get_task.lua on a private redis-server', () => {
  let redis: PrivateRedis;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });

  it('runs by EVALSHA after NOSCRIPT, and reads a pending task, a scheduled one and none', async () => {
    const conn = redis.connect();
    const c = new Client({ redis: conn, prefix: 'gt' });
    const a = await c.enqueue({ type: 'echo', payload: { n: 1 } });
    const b = await c.enqueue({ type: 'echo', payload: Buffer.from('later'), processIn: 60_000, headers: { tenant: 'acme' } });
    await conn.script('FLUSH');
    const ra = await c.getTask('default', a.id);
    assert.equal(ra.state, 'pending');
    assert.deepEqual(ra.payload, Buffer.from([0x81, 0xa1, 0x6e, 0x01]));
    const rb = await c.getTask('default', b.id);
    assert.equal(rb.state, 'scheduled');
    assert.equal(rb.payload.toString(), 'later');
    assert.deepEqual(rb.headers, { tenant: 'acme' });
    assert.ok(rb.nextProcessAt! >= Date.now() + 50_000);
    assert.equal(await conn.script('EXISTS', generated.getTask.sha1).then((r) => (r as number[])[0]), 1);
    await assert.rejects(c.getTask('default', 'no-such-task'), { name: 'TaskNotFoundError' });
    await assert.rejects(c.getTask('nope', 'x'), /no queue "nope"/);
  });
});
