// Calling Redis (docs/protocol.md, "Loading and calling the scripts"):
// scripts by EVALSHA, sent again as EVAL when Redis answers NOSCRIPT;
// several calls in one pipeline, one round trip.

import type { Cluster, Redis } from 'ioredis';
import type { ScriptSource } from './scripts.generated.js';

export type RedisConnection = Redis | Cluster;
export type Arg = string | Buffer | number;

/** A script call: the script, its KEYS and ARGV; buffers asks for bulk replies as Buffers. */
export interface ScriptCall {
  kind: 'script';
  script: ScriptSource;
  keys: string[];
  args: Arg[];
  buffers?: boolean;
}

/** Any other command. */
export interface CommandCall {
  kind: 'command';
  name: string;
  args: Arg[];
}

export type Call = ScriptCall | CommandCall;

export interface Reply {
  err?: Error | undefined;
  value?: unknown;
}

/** Whether err says the script is not in Redis's cache. */
export function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

/** Whether err says Redis refused the call without running it: it may be sent again. */
export function isRefused(err: unknown): boolean {
  return err instanceof Error && /^(TRYAGAIN|CLUSTERDOWN|READONLY|LOADING|MASTERDOWN) /.test(err.message);
}

type Queuer = Record<string, (...args: unknown[]) => unknown>;

function queue(p: Queuer, c: Call, byEval: boolean): void {
  if (c.kind === 'command') {
    p[c.name]!(...c.args);
    return;
  }
  const cmd = (byEval ? 'eval' : 'evalsha') + (c.buffers ? 'Buffer' : '');
  p[cmd]!(byEval ? c.script.source : c.script.sha1, c.keys.length, ...c.keys, ...c.args);
}

/**
 * Sends calls in one pipeline (one round trip) and returns a reply per
 * call; the script calls answered NOSCRIPT are sent again with EVAL in a
 * second one. A lost connection rejects.
 */
export async function pipeline(redis: RedisConnection, calls: readonly Call[]): Promise<Reply[]> {
  const p = redis.pipeline();
  for (const c of calls) queue(p as unknown as Queuer, c, false);
  const res = await p.exec();
  if (!res) throw new Error('the pipeline was not run');
  const replies: Reply[] = res.map(([err, value]) => ({ err: err ?? undefined, value }));
  const missing = replies.flatMap((r, i) => (isNoScript(r.err) ? [i] : []));
  if (missing.length > 0) {
    const again = redis.pipeline();
    for (const i of missing) queue(again as unknown as Queuer, calls[i]!, true);
    const res2 = await again.exec();
    if (!res2) throw new Error('the pipeline was not run');
    missing.forEach((i, j) => {
      const [err, value] = res2[j]!;
      replies[i] = { err: err ?? undefined, value };
    });
  }
  return replies;
}

/** Sends one call on its own (no pipeline), EVAL after NOSCRIPT; rejects on its error. */
export async function single(redis: RedisConnection, c: Call): Promise<unknown> {
  const r = redis as unknown as Queuer;
  const run = (byEval: boolean): Promise<unknown> => {
    if (c.kind === 'command') return r[c.name]!(...c.args) as Promise<unknown>;
    const cmd = (byEval ? 'eval' : 'evalsha') + (c.buffers ? 'Buffer' : '');
    return r[cmd]!(byEval ? c.script.source : c.script.sha1, c.keys.length, ...c.keys, ...c.args) as Promise<unknown>;
  };
  try {
    return await run(false);
  } catch (e) {
    if (c.kind === 'script' && isNoScript(e)) return run(true);
    throw e;
  }
}
