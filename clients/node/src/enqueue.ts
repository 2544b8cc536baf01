// The enqueue scripts' calls (docs/protocol.md, "The enqueue scripts"):
// KEYS and ARGV of enqueue, enqueue_capped and enqueue_one for the tasks
// of one partition, and what their reply codes mean.

import type { Arg, ScriptCall } from './calls.js';
import { enqueueKeys, enqueueOneKeys } from './keys.js';
import { enqueue, enqueueCapped, enqueueOne } from './scripts.generated.js';
import { scriptPlain, type Built } from './task.js';

/** The reply codes of the enqueue scripts (lua/include/codes.lua). */
export const codes = {
  pending: 0,
  scheduled: 1,
  duplicateId: -1,
  duplicateUnique: -2,
  queueFull: -3,
  groupFull: -4,
  closed: -5,
  guessed: -6,
} as const;

/** The tasks of one queue partition: one script call. */
export interface Group {
  queue: string;
  partition: number;
  T: string;
  tasks: Built[];
}

export interface Limits {
  shardSize: number;
  feedSize: number;
}

/** The ARGV of enqueue.lua for g: 2 fields a task when every task is script-plain, else 7. */
export function enqueueArgs(g: Group, l: Limits): Arg[] {
  const plain = g.tasks.every(scriptPlain);
  const args: Arg[] = [g.T, '', String(l.shardSize), String(l.feedSize), plain ? '2' : '7'];
  for (const t of g.tasks) {
    if (plain) args.push(t.msg, t.id);
    else args.push(t.msg, t.id, String(t.at), String(t.in), t.unique, String(t.uttl), String(t.idClaim));
  }
  return args;
}

/** The call enqueueing g: enqueue_capped (with the partition and the queue's route count) when capped, else enqueue. */
export function enqueueCall(g: Group, l: Limits, capped: boolean, routeCount: number): ScriptCall {
  const args = enqueueArgs(g, l);
  if (!capped) return { kind: 'script', script: enqueue, keys: enqueueKeys(g.T), args };
  return { kind: 'script', script: enqueueCapped, keys: enqueueKeys(g.T), args: [String(g.partition), String(routeCount), ...args] };
}

/** enqueue_one's first argument: the shard size and the feed cap, 4 bytes each, big-endian. */
export function packLimits(l: Limits): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(l.shardSize, 0);
  b.writeUInt32BE(l.feedSize, 4);
  return b;
}

/** The enqueue_one call of a single script-plain task, guessing the tail shard guess (-1: none). */
export function enqueueOneCall(T: string, t: Built, l: Limits, guess: number): ScriptCall {
  return { kind: 'script', script: enqueueOne, keys: enqueueOneKeys(T, guess), args: [packLimits(l), t.msg] };
}
