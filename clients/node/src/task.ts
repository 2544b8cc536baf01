// A task and its options, and building one (docs/protocol.md, "Task
// options"): validated, its ID generated or taken, its payload wrapped,
// its message encoded, its route key and script fields worked out.

import { createHash } from 'node:crypto';
import { encode } from '@msgpack/msgpack';
import { Codec, Use } from './envelope.js';
import { PayloadTooLargeError, ValidationError } from './errors.js';
import { idTime, storedId } from './ids.js';
import { compactMaxRetry, encodeMessage, maxRetryForever, type Message } from './message.js';
import { checkName, maxNameBytes, utf8 } from './names.js';
import { infoOf, type TaskInfo } from './taskinfo.js';

export const defaultQueue = 'default';
export const maxHeadersBytes = 4096;

/** A moment: unix milliseconds, or a Date. */
export type Moment = number | Date;

/** The per-task options. Durations are milliseconds; moments unix milliseconds or Dates. */
export interface TaskOptions {
  /** The queue; 'default' when not given. */
  queue?: string;
  /** Retries after the first attempt, 25 by default; 0 runs once; Infinity retries forever. */
  maxRetry?: number | bigint;
  /** ms each attempt may run (> 0). */
  timeout?: number;
  /** The moment after which no attempt runs on. */
  deadline?: Moment;
  /** ms to keep the task, with its result, once it succeeded (0: deleted at once). */
  retention?: number;
  /** The task's group (a tenant): fair turns, group limits, and its partition. */
  group?: string;
  /** Small string headers, such as a W3C traceparent; an empty value is left out. */
  headers?: Record<string, string>;
  /** The caller's task ID instead of a generated one: claimed, so an enqueue with it is idempotent. */
  taskId?: string;
  /** Unique for this many ms (>= 1): another task with the same uniqueness ID is refused while the lock lasts. */
  unique?: number;
  /** The uniqueness ID (1 to 128 bytes) instead of the type and the payload's SHA-1; needs unique or uniqueUntilFinished. */
  uniqueBy?: string;
  /** Unique while the task lives, and for this many ms once it finished (0: released when it finishes); overrides unique's ttl. */
  uniqueUntilFinished?: number;
  /** Delay by this many ms, timed by the Redis server's clock. */
  processIn?: number;
  /** Delay until this moment, by this client's clock. */
  processAt?: Moment;
}

/** A task to enqueue. */
export interface Task extends TaskOptions {
  /** The task type, which picks the handler. */
  type: string;
  /**
   * The payload: a Uint8Array is sent as it is (raw unless raw is false,
   * which says the bytes are msgpack already); a string with raw true is
   * sent as its UTF-8 bytes; any other value is msgpack-encoded.
   */
  payload?: unknown;
  /** Whether the payload is raw bytes (workers' typed handlers read it as JSON) rather than msgpack. */
  raw?: boolean;
}

/** A task ready to send. */
export interface Built {
  index: number;
  queue: string;
  msg: Buffer;
  id: Buffer; // stored form
  at: number;
  in: number;
  unique: string;
  uttl: number;
  idClaim: number;
  route: Buffer | null;
  info: TaskInfo;
  partition: number;
}

/** What building needs of the producer. */
export interface BuildSettings {
  codec: Codec;
  fullMessages: boolean;
  maxPayloadSize: number;
  idTtlMs: number;
  /** Headers every task gets unless it sets the same key (Go's ContextHeaders). */
  defaultHeaders?: Record<string, string> | undefined;
}

/** Whether t takes the scripts' 2-field layout: pending now, a generated ID, not unique. */
export function scriptPlain(t: Built): boolean {
  return t.at === 0 && t.in === 0 && t.unique === '' && t.idClaim === 0;
}

function fail(msg: string): never {
  throw new ValidationError(`shardq: ${msg}`);
}

function msOf(what: string, v: unknown, min: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) fail(`${what} ${String(v)}: want an integer count of milliseconds`);
  if (v < min) fail(`${what} ${v}: want >= ${min} ms`);
  return v;
}

function momentOf(what: string, v: Moment): number {
  const ms = v instanceof Date ? v.getTime() : v;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms)) fail(`${what} ${String(v)}: want unix milliseconds or a Date`);
  return ms;
}

function maxRetryOf(v: number | bigint): bigint {
  if (v === Infinity) return maxRetryForever;
  if (typeof v === 'number' && !Number.isSafeInteger(v)) fail(`maxRetry ${v}: want an integer >= 0, or Infinity`);
  const n = BigInt(v);
  if (n < 0n || n > maxRetryForever) fail(`maxRetry ${v}: want 0 to 2^63-1, or Infinity`);
  return n;
}

function headersOf(own: Record<string, string> | undefined, defaults: Record<string, string> | undefined): Record<string, string> {
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(defaults ?? {})) if (k !== '' && typeof v === 'string' && v !== '') h[k] = v;
  for (const [k, v] of Object.entries(own ?? {})) {
    if (k === '' || /[\0\r\n]/.test(k)) fail(`header key ${JSON.stringify(k)}: empty or with a control character`);
    if (typeof v !== 'string') fail(`header ${JSON.stringify(k)}: value is ${typeof v}, want a string`);
    if (v === '') delete h[k]; // an empty value deletes the header
    else h[k] = v;
  }
  let size = 0;
  for (const [k, v] of Object.entries(h)) size += Buffer.byteLength(k) + Buffer.byteLength(v);
  if (size > maxHeadersBytes) fail(`headers of ${size} bytes, at most ${maxHeadersBytes}`);
  return h;
}

/** The payload's bytes and whether they are raw. */
export function payloadOf(t: Task): { bytes: Uint8Array; raw: boolean } {
  const p = t.payload;
  if (p instanceof Uint8Array) return { bytes: p, raw: t.raw ?? true };
  if (t.raw) {
    if (typeof p === 'string') return { bytes: utf8(p), raw: true };
    fail(`task ${JSON.stringify(t.type)}: raw payload is ${typeof p}, want a Uint8Array or a string`);
  }
  if (p === undefined) return { bytes: new Uint8Array(0), raw: false };
  return { bytes: encode(p, { useBigInt64: true }), raw: false };
}

/**
 * Builds t at now (unix ms): newId gives a generated ID's stored form.
 * Throws ValidationError (PayloadTooLargeError) before anything is
 * written.
 */
export function build(t: Task, index: number, s: BuildSettings, now: number, newId: (now: number) => Buffer): Built {
  if (t === null || typeof t !== 'object') fail(`task ${String(t)}: want an object with a type`);
  checkName('task type', t.type);
  const queue = t.queue === undefined ? defaultQueue : checkName('queue', t.queue);
  const { bytes: payload, raw } = payloadOf(t);
  if (payload.length > s.maxPayloadSize) {
    throw new PayloadTooLargeError(`shardq: task ${JSON.stringify(t.type)} payload is ${payload.length} bytes, limit ${s.maxPayloadSize}`);
  }
  const m: Message = {
    id: new Uint8Array(0), group: '', type: t.type, payload, raw, maxRetry: BigInt(compactMaxRetry), timeout: 0,
    deadline: 0, retention: 0, unique: '', enqueuedAt: now, headers: headersOf(t.headers, s.defaultHeaders), flow: '',
  };
  if (t.group !== undefined) m.group = checkName('group', t.group);
  if (t.maxRetry !== undefined) m.maxRetry = maxRetryOf(t.maxRetry);
  if (t.timeout !== undefined) m.timeout = msOf('timeout', t.timeout, 1);
  if (t.deadline !== undefined) m.deadline = momentOf('deadline', t.deadline);
  if (t.retention !== undefined) m.retention = msOf('retention', t.retention, 0);
  let idClaim = 0;
  if (t.taskId !== undefined) {
    m.id = storedId(checkName('task ID', t.taskId));
    idClaim = s.idTtlMs;
  } else {
    m.id = newId(now);
    m.enqueuedAt = idTime(m.id) ?? now; // the ID's own millisecond: the message need not carry it
  }
  let unique = '';
  let uttl = 0;
  if (t.uniqueBy !== undefined) {
    const n = typeof t.uniqueBy === 'string' ? Buffer.byteLength(t.uniqueBy) : 0;
    if (n < 1 || n > maxNameBytes) fail(`uniqueBy ${JSON.stringify(t.uniqueBy)}: want 1 to ${maxNameBytes} bytes`);
    if (t.unique === undefined && t.uniqueUntilFinished === undefined) fail(`uniqueBy ${JSON.stringify(t.uniqueBy)}: give unique (a ttl in ms) or uniqueUntilFinished too`);
  }
  if (t.unique !== undefined) uttl = msOf('unique', t.unique, 1);
  if (t.unique !== undefined || t.uniqueUntilFinished !== undefined) {
    unique = t.uniqueBy ?? `${t.type}:${createHash('sha1').update(payload).digest('hex')}`;
    if (t.uniqueUntilFinished !== undefined) {
      // < 0: until it finishes, then -uttl - 1 ms (lua/engine/include/unique.lua)
      uttl = -msOf('uniqueUntilFinished', t.uniqueUntilFinished, 0) - 1;
    }
    m.unique = unique;
  }
  let at = 0;
  let inMs = 0;
  if (t.processAt !== undefined && t.processIn !== undefined) fail(`task ${JSON.stringify(t.type)}: give processAt or processIn, not both`);
  if (t.processAt !== undefined) at = momentOf('processAt', t.processAt);
  if (t.processIn !== undefined) inMs = msOf('processIn', t.processIn, 0);
  // the route key: group, else uniqueness ID, else the caller's ID (stored form)
  let route: Buffer | null = null;
  if (m.group !== '') route = Buffer.from(m.group, 'utf8');
  else if (unique !== '') route = Buffer.from(unique, 'utf8');
  else if (idClaim > 0) route = Buffer.from(m.id);
  const info = infoOf(queue, 0, m);
  if (at > 0 || inMs > 0) info.nextProcessAt = at > 0 ? at : now + inMs;
  const stored = Buffer.from(m.id);
  m.payload = s.codec.wrap(payload, stored, Use.Payload);
  return { index, queue, msg: encodeMessage(m, s.fullMessages), id: stored, at, in: inMs, unique, uttl, idClaim, route, info, partition: 0 };
}
