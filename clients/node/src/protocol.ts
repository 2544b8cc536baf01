// The protocol version (docs/protocol.md, "Protocol version"): before
// its first write a producer records its version under <prefix>:protocol
// when none is, and refuses a stored version of another major.

import { decode } from '@msgpack/msgpack';
import { ProtocolVersionError } from './errors.js';
import { protocolKey } from './keys.js';
import type { RedisConnection } from './calls.js';

/** The version of docs/protocol.md this client follows. */
export const protocolVersion = { major: 1, minor: 0 } as const;
export const protocolVersionText = `${protocolVersion.major}.${protocolVersion.minor}`;

/** Parses "<major>.<minor>": decimal counts of 1 to 6 digits, the major at least 1. */
export function parseVersion(s: string): { major: number; minor: number } | undefined {
  const m = /^([0-9]{1,6})\.([0-9]{1,6})$/.exec(s);
  if (!m) return undefined;
  const major = Number(m[1]);
  return major >= 1 ? { major, minor: Number(m[2]) } : undefined;
}

/** What a stored value (null: none, now recorded) says: throws ProtocolVersionError unless this client may write. */
export function checkStored(prefix: string, stored: string | null): void {
  if (stored === null) return;
  const key = protocolKey(prefix);
  const v = parseVersion(stored);
  if (!v) {
    throw new ProtocolVersionError(`shardq: ${key} holds ${JSON.stringify(stored)}, not a protocol version (<major>.<minor>); this client follows ${protocolVersionText} and writes nothing`,
      key, stored, protocolVersionText);
  }
  if (v.major !== protocolVersion.major) {
    throw new ProtocolVersionError(`shardq: ${key} holds protocol version ${stored}, another major than this client's ${protocolVersionText}: it writes nothing under prefix ${JSON.stringify(prefix)}`,
      key, stored, protocolVersionText);
  }
}

/** How recent a worker's heartbeat must be for it to count as running, in ms: as the Go producer's protocol.Live. */
const liveMs = 60_000;

/**
 * SET <prefix>:protocol 1.0 NX GET, then checkStored; and beside it, the
 * workers' heartbeats and statuses: while a running worker follows no
 * version (shardq 0.1.0) or another major, it would send what this client
 * writes to dead, so the claim throws ProtocolVersionError naming it. The
 * calls go side by side (their keys may sit on several cluster nodes).
 */
export async function claim(redis: RedisConnection, prefix: string): Promise<void> {
  const [stored, now, beats, statuses] = await Promise.all([
    redis.call('SET', protocolKey(prefix), protocolVersionText, 'NX', 'GET') as Promise<string | null>,
    redis.time(),
    redis.zrange(`${prefix}:workers`, 0, -1, 'WITHSCORES'),
    redis.hgetallBuffer(`${prefix}:workers:status`),
  ]);
  checkStored(prefix, stored);
  const since = Number(now[0]) * 1000 + Math.floor(Number(now[1]) / 1000) - liveMs;
  const old: string[] = [];
  for (let i = 0; i + 1 < beats.length; i += 2) {
    const id = beats[i]!;
    const raw = statuses[id];
    if (raw === undefined || Number(beats[i + 1]) < since) continue; // stopped, or crashed and waiting to be reaped
    let st: unknown;
    try {
      st = decode(raw);
    } catch {
      continue; // not a worker's status: nothing to refuse for
    }
    if (typeof st !== 'object' || st === null) continue;
    const f = st as Record<string, unknown>;
    const v = typeof f.v === 'string' ? f.v : '';
    if (parseVersion(v)?.major !== protocolVersion.major) {
      old.push(`${id} (${String(f.h ?? '')}, pid ${Number(f.p ?? 0)}) follows ${v ? `protocol ${v}` : 'no protocol version (shardq 0.1.0)'}`);
    }
  }
  if (old.length > 0) {
    old.sort();
    const more = old.length > 1 ? ` and ${old.length - 1} more` : '';
    throw new ProtocolVersionError(`shardq: this client writes protocol ${protocolVersionText}, which running workers cannot read: worker ${old[0]}${more}; upgrade the workers first`,
      protocolKey(prefix), stored ?? protocolVersionText, protocolVersionText);
  }
}
