// What the client says of a task: the TaskInfo an enqueue returns and
// getTask reads back (through get_task.lua, as Go's Inspector does).

import { decode } from '@msgpack/msgpack';
import { Codec, Use } from './envelope.js';
import { KeyRingError } from './errors.js';
import { idTime, publicId } from './ids.js';
import { decodeMessage, emptyMessage, maxRetryForever, type Message } from './message.js';

/** Where a task is: scheduled, pending, active, retry, succeeded or dead. */
export type TaskState = 'pending' | 'scheduled' | 'active' | 'retry' | 'succeeded' | 'dead' | (string & {});

/** A task, as enqueued or read back. Times are unix milliseconds, durations milliseconds; undefined is none. */
export interface TaskInfo {
  /** Canonical UUID text for a generated ID, else the caller's taskId as given. */
  id: string;
  queue: string;
  partition: number;
  type: string;
  state: TaskState;
  /** The payload's bytes (opened): msgpack unless raw. */
  payload: Buffer;
  raw: boolean;
  /** Retries after the first attempt; Infinity: forever. */
  maxRetry: number;
  attempts: number;
  timeout?: number | undefined;
  deadline?: number | undefined;
  retention?: number | undefined;
  /** The uniqueness ID its lock is taken by ('' when not unique). */
  uniqueId: string;
  group: string;
  headers: Record<string, string>;
  enqueuedAt?: number | undefined;
  nextProcessAt?: number | undefined;
  startedAt?: number | undefined;
  finishedAt?: number | undefined;
  lastFailedAt?: number | undefined;
  lastError: string;
  worker: string;
  /** What its handler set (opened), kept for its retention; hasResult tells an empty result from none. */
  result?: Buffer | undefined;
  hasResult: boolean;
  /** The ID of the key its payload is sealed with; '' when not encrypted. */
  encryptedWith: string;
  /** Some values are sealed with a key the reader's ring lacks (or it has none): left empty. */
  redacted: boolean;
  /** The message, the record or a value does not decode or open: lastError says why. */
  malformed: boolean;
  cancelRequested: boolean;
  /** Its rank in the feed it was read from; 0 when it left the feed. */
  rank: number;
}

const text = new TextDecoder();

function ms(v: number): number | undefined {
  return v === 0 ? undefined : v;
}

/** maxRetry as a number: Infinity for "forever" (2^63 - 1). */
export function maxRetryNumber(n: bigint): number {
  return n >= maxRetryForever ? Infinity : Number(n);
}

/** The TaskInfo of a message (and its record), as an enqueue or a read makes it. */
export function infoOf(queue: string, partition: number, m: Message): TaskInfo {
  return {
    id: publicId(m.id), queue, partition, type: m.type, state: 'pending', payload: Buffer.from(m.payload), raw: m.raw,
    maxRetry: maxRetryNumber(m.maxRetry), attempts: 0, timeout: ms(m.timeout), deadline: ms(m.deadline),
    retention: ms(m.retention), uniqueId: m.unique, group: m.group, headers: { ...m.headers },
    enqueuedAt: ms(m.enqueuedAt || (idTime(m.id) ?? 0)), lastError: '', worker: '', hasResult: false,
    encryptedWith: '', redacted: false, malformed: false, cancelRequested: false, rank: 0,
  };
}

function bytesOf(v: unknown): Buffer | undefined {
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  return undefined;
}

function n(v: unknown): number {
  return typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : 0;
}

/** The record's fields: state, attempts, token, worker, last error, times. */
function decodeRecord(b: Buffer): unknown[] {
  const r = decode(b, { useBigInt64: true, rawStrings: true });
  if (!Array.isArray(r)) throw new Error(`decode task record (${b.length} bytes): not an array`);
  return r;
}

/**
 * Reads get_task.lua's reply for the task stored as id in partition
 * part of queue: its TaskInfo, values opened by codec, or undefined when
 * the partition does not hold it.
 */
export function fromGetTask(reply: unknown, queue: string, part: number, id: Buffer, codec: Codec, limit: number): TaskInfo | undefined {
  if (!Array.isArray(reply) || reply.length < 3) throw new Error(`get task ${publicId(id)}: unexpected reply ${String(reply)}`);
  const msg = bytesOf(reply[0]);
  if (msg === undefined) return undefined; // nil: not in this partition
  const problems: string[] = [];
  let m: Message;
  let malformed = false;
  try {
    m = decodeMessage(msg);
  } catch (e) {
    malformed = true;
    problems.push((e as Error).message);
    // still a task to see: its bytes as a raw payload
    m = { ...emptyMessage(), id, payload: msg, raw: true };
  }
  const ti = infoOf(queue, part, m);
  ti.malformed = malformed;
  let lastErrorRaw: Buffer | undefined;
  const rec = bytesOf(reply[1]);
  if (rec && rec.length > 0) {
    try {
      const r = decodeRecord(rec);
      const state = r[0] instanceof Uint8Array ? text.decode(r[0]) : '';
      ti.state = state === 'done' ? 'succeeded' : state;
      ti.attempts = n(r[1]);
      ti.worker = r[3] instanceof Uint8Array ? text.decode(r[3]) : '';
      lastErrorRaw = r[4] instanceof Uint8Array ? Buffer.from(r[4]) : undefined;
      ti.lastFailedAt = ms(n(r[5]));
      ti.startedAt = ms(n(r[6]));
      ti.finishedAt = ms(n(r[7]));
      ti.nextProcessAt = ms(n(r[8]));
    } catch (e) {
      problems.push(`decode task record (${rec.length} bytes): ${(e as Error).message}`);
    }
  }
  ti.rank = Math.max(n(reply[2]), 0);
  const result = bytesOf(reply[4]);
  if (result !== undefined) {
    ti.result = result;
    ti.hasResult = true;
  }
  ti.cancelRequested = n(reply[5]) === 1;
  const ring = codec.opts.ring;
  const broken: string[] = [];
  // field opens a stored value; undefined when it does not (sealed with
  // a key the ring lacks: redacted; else broken, said in lastError)
  const field = (b: Buffer, use: Use): Buffer | undefined => {
    if (!(b.length > 0 && b[0] === 0xc1) && !ring) return b;
    try {
      return codec.open(b, id, use, limit);
    } catch (e) {
      if (e instanceof KeyRingError && /with key/.test(e.message)) ti.redacted = true;
      else broken.push(`${Use[use]!.toLowerCase()}: ${(e as Error).message}`);
      return undefined;
    }
  };
  if (!ti.malformed && ((ti.payload.length > 0 && ti.payload[0] === 0xc1) || ring)) {
    const p = ti.payload;
    if (p.length >= 3 && p[0] === 0xc1 && (p[1]! & 0x04) !== 0 && p.length >= 3 + p[2]!) {
      ti.encryptedWith = p.subarray(3, 3 + p[2]!).toString('utf8');
    }
    const v = field(p, Use.Payload);
    if (v !== undefined || ti.redacted) ti.payload = v ?? Buffer.alloc(0);
  }
  if (ti.hasResult) ti.result = field(ti.result!, Use.Result);
  if (lastErrorRaw) ti.lastError = (field(lastErrorRaw, Use.Error) ?? Buffer.alloc(0)).toString('utf8');
  const all = [...problems, ...broken];
  if (all.length > 0) {
    ti.malformed = true;
    ti.lastError = [ti.lastError, ...all].filter((s) => s !== '').join('; ');
  }
  return ti;
}
