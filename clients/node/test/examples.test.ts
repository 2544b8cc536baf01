// The README's and examples/' programs run as written.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, it } from 'node:test';
import { repoRoot, startRedis, type PrivateRedis } from './helpers.js';

let redis: PrivateRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

it('examples/enqueue.ts runs', async () => {
  const dir = join(repoRoot, 'clients', 'node');
  const { stdout } = await promisify(execFile)(process.execPath, ['dist/examples/enqueue.js'], { cwd: dir, env: { ...process.env, SHARDQ_REDIS_URL: redis.url } });
  assert.match(stdout, /order-42: duplicate false, then true \(order-42\)/);
  assert.match(stdout, /is pending, 0 attempts so far/);
});

it("the README's program runs", async () => {
  const dir = join(repoRoot, 'clients', 'node');
  const { stdout } = await promisify(execFile)(process.execPath, ['dist/examples/readme.js'], { cwd: dir, env: { ...process.env, SHARDQ_REDIS_URL: redis.url } });
  assert.match(stdout, /^enqueued [0-9a-f-]{36}: pending$/m);
});
