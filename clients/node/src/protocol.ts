// The protocol version (docs/protocol.md, "Protocol version"): before
// its first write a producer records its version under <prefix>:protocol
// when none is, and refuses a stored version of another major.

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

/** SET <prefix>:protocol 1.0 NX GET, then checkStored. */
export async function claim(redis: RedisConnection, prefix: string): Promise<void> {
  const stored = (await redis.call('SET', protocolKey(prefix), protocolVersionText, 'NX', 'GET')) as string | null;
  checkStored(prefix, stored);
}
