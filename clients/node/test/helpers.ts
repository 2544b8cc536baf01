// What the tests share: a private redis-server on a free port, killed
// after (never the machine's own Redis), and the repository's paths.

import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

/** The repository's root: dist/test/ is four levels under it. */
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

export function readVectors<T>(name: string): { about: string; cases: T[] } {
  return JSON.parse(readFileSync(join(repoRoot, 'testdata', 'protocol', name), 'utf8'));
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface PrivateRedis {
  port: number;
  url: string;
  /** A new connection to the server; closed by stop(). */
  connect(): Redis;
  stop(): Promise<void>;
}

/** Starts redis-server on a free loopback port, without persistence. */
export async function startRedis(): Promise<PrivateRedis> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const proc: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    const conns: Redis[] = [];
    const connect = (): Redis => {
      const r = new Redis({ port, host: '127.0.0.1', lazyConnect: false, maxRetriesPerRequest: 1 });
      conns.push(r);
      return r;
    };
    const stop = async (): Promise<void> => {
      for (const c of conns) c.disconnect();
      proc.kill('SIGKILL');
      await exited;
    };
    // ready once it answers PING
    for (let i = 0; i < 100; i++) {
      if (proc.exitCode !== null) break;
      const ok = await new Promise<boolean>((resolve) => {
        const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        r.on('error', () => {});
        r.connect().then(() => r.ping()).then(() => resolve(true), () => resolve(false)).finally(() => r.disconnect());
      });
      if (ok) return { port, url: `redis://127.0.0.1:${port}/0`, connect, stop };
      await new Promise((r) => setTimeout(r, 50));
    }
    await stop();
    if (attempt >= 2) throw new Error(`redis-server did not start on port ${port}`);
  }
}

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
