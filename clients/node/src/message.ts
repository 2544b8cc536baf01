// A task's message (docs/protocol.md, "The message"): the compact form
// and the full form, written byte for byte as the Go producer writes
// them, and read back in either form.

import { decode } from '@msgpack/msgpack';
import { idTime } from './ids.js';
import { Reader, Writer } from './msgpack.js';
import { utf8 } from './names.js';

/** The MaxRetry a compact message stands for. */
export const compactMaxRetry = 25;
/** MaxRetry that retries forever: the largest signed 64-bit integer. */
export const maxRetryForever = (1n << 63n) - 1n;

export interface Message {
  id: Uint8Array; // stored form
  group: string;
  type: string;
  payload: Uint8Array; // stored: wrapped by the envelope when compressed or encrypted
  raw: boolean;
  maxRetry: bigint;
  timeout: number; // ms, 0 none
  deadline: number; // unix ms, 0 none
  retention: number; // ms
  unique: string;
  enqueuedAt: number; // unix ms
  headers: Record<string, string>;
  flow: string;
}

/** enqueuedAt as written: 0 when the generated ID holds it. */
function storedEnqueuedAt(m: Message): number {
  return idTime(m.id) === m.enqueuedAt ? 0 : m.enqueuedAt;
}

/** Whether m is written in the compact form (unless the producer writes full messages). */
export function isCompact(m: Message): boolean {
  return m.group === '' && m.maxRetry === BigInt(compactMaxRetry) && m.timeout === 0 && m.deadline === 0 &&
    m.retention === 0 && m.unique === '' && Object.keys(m.headers).length === 0 && m.flow === '' &&
    storedEnqueuedAt(m) === 0 && m.id.length > 0;
}

/** How many of the full form's fields are written: up to the last one not zero. */
function fieldCount(m: Message): number {
  if (m.flow !== '') return 13;
  if (Object.keys(m.headers).length > 0) return 12;
  if (storedEnqueuedAt(m) !== 0) return 11;
  if (m.unique !== '') return 10;
  if (m.retention !== 0) return 9;
  if (m.deadline !== 0) return 8;
  if (m.timeout !== 0) return 7;
  if (m.maxRetry !== 0n) return 6;
  if (m.raw) return 5;
  if (m.payload.length > 0) return 4;
  return 3;
}

/** Compares two strings by their UTF-8 bytes, as Go sorts header keys. */
function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The message's bytes: compact when m allows it and full is false, else the full form. */
export function encodeMessage(m: Message, full: boolean): Buffer {
  const w = new Writer();
  if (!full && isCompact(m)) {
    return w.byte(m.raw ? 0x92 : 0x91).str(m.id).str(utf8(m.type)).bytes(m.payload).done();
  }
  const n = fieldCount(m);
  w.byte(0x90 | n).str(m.id).str(utf8(m.group)).str(utf8(m.type));
  for (let f = 4; f <= Math.min(n, 11); f++) {
    switch (f) {
      case 4: w.bin(m.payload); break;
      case 5: w.byte(m.raw ? 0xc3 : 0xc2); break;
      case 6: w.int(m.maxRetry); break;
      case 7: w.int(m.timeout); break;
      case 8: w.int(m.deadline); break;
      case 9: w.int(m.retention); break;
      case 10: w.str(utf8(m.unique)); break;
      case 11: w.int(storedEnqueuedAt(m)); break;
    }
  }
  if (n >= 12) {
    const keys = Object.keys(m.headers).sort(byBytes);
    w.mapHeader(keys.length);
    for (const k of keys) w.str(utf8(k)).str(utf8(m.headers[k]!));
  }
  if (n >= 13) w.str(utf8(m.flow));
  return w.done();
}

const text = new TextDecoder('utf-8', { fatal: false });

function num(v: unknown, field: string): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (v === null || v === undefined) return 0;
  throw new Error(`field ${field} is ${typeof v}, want an integer`);
}

function str(v: unknown, field: string): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (v instanceof Uint8Array) return text.decode(v);
  throw new Error(`field ${field} is ${typeof v}, want a string`);
}

/** A message with every field zero. */
export function emptyMessage(): Message {
  return {
    id: new Uint8Array(0), group: '', type: '', payload: new Uint8Array(0), raw: false, maxRetry: 0n,
    timeout: 0, deadline: 0, retention: 0, unique: '', enqueuedAt: 0, headers: {}, flow: '',
  };
}

/** Decodes a message of either form; throws an Error saying why it does not decode. */
export function decodeMessage(b: Uint8Array): Message {
  const m = emptyMessage();
  if (b[0] === 0x91 || b[0] === 0x92) {
    const r = new Reader(b);
    r.byte();
    const id = r.str();
    const type = r.str();
    if (!r.ok || !id || !type || id.length === 0 || type.length === 0) {
      throw new Error(`decode task message (${b.length} bytes): a compact message whose ID or type is missing or cut short`);
    }
    m.id = Buffer.from(id);
    m.type = text.decode(type);
    m.raw = b[0] === 0x92;
    m.maxRetry = BigInt(compactMaxRetry);
    m.payload = Buffer.from(r.rest());
  } else {
    let arr: unknown;
    try {
      arr = decode(b, { useBigInt64: true, rawStrings: true });
    } catch (e) {
      throw new Error(`decode task message (${b.length} bytes): ${(e as Error).message}`);
    }
    if (!Array.isArray(arr) || arr.length < 3) throw new Error(`decode task message (${b.length} bytes): not an array of 3 or more`);
    try {
      const f = arr as unknown[];
      m.id = f[0] instanceof Uint8Array ? Buffer.from(f[0]) : Buffer.from(str(f[0], '1'), 'utf8');
      m.group = str(f[1], '2');
      m.type = str(f[2], '3');
      if (f[3] instanceof Uint8Array) m.payload = Buffer.from(f[3]);
      else if (f[3] !== undefined && f[3] !== null) throw new Error('field 4 is not binary');
      m.raw = f[4] === true;
      m.maxRetry = f[5] === undefined || f[5] === null ? 0n : BigInt(f[5] as number | bigint);
      m.timeout = num(f[6], '7');
      m.deadline = num(f[7], '8');
      m.retention = num(f[8], '9');
      m.unique = str(f[9], '10');
      m.enqueuedAt = num(f[10], '11');
      if (f[11] instanceof Map || (f[11] !== null && typeof f[11] === 'object' && !(f[11] instanceof Uint8Array))) {
        for (const [k, v] of Object.entries(f[11] as Record<string, unknown>)) m.headers[k] = str(v, '12');
      }
      m.flow = str(f[12], '13');
    } catch (e) {
      throw new Error(`decode task message (${b.length} bytes): ${(e as Error).message}`);
    }
    if (m.id.length === 0 || m.type === '') throw new Error(`decode task message (${b.length} bytes): missing id or type`);
  }
  if (m.enqueuedAt === 0) m.enqueuedAt = idTime(m.id) ?? 0;
  return m;
}
