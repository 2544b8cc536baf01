// Task IDs (docs/protocol.md, "Task IDs"): generated UUIDv7s, and the
// stored and public forms of every ID.

import { randomFillSync } from 'node:crypto';

const uuidText = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The stored form of a public task ID. */
export function storedId(publicId: string): Buffer {
  if (publicId.length === 36 && uuidText.test(publicId)) return Buffer.from(publicId.replaceAll('-', ''), 'hex');
  const b = Buffer.from(publicId, 'utf8');
  if (b.length === 16) return Buffer.concat([b, Buffer.of(0)]);
  return b;
}

/** The public form of a stored task ID. */
export function publicId(stored: Uint8Array): string {
  const b = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  if (b.length === 16) {
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
  if (b.length === 17 && b[16] === 0) return b.subarray(0, 16).toString('utf8');
  return b.toString('utf8');
}

/** The unix millisecond a generated ID (a UUIDv7's 16 stored bytes) holds, or undefined for any other ID. */
export function idTime(stored: Uint8Array): number | undefined {
  if (stored.length !== 16 || stored[6]! >> 4 !== 7 || (stored[8]! & 0xc0) !== 0x80) return undefined;
  let ms = 0;
  for (let i = 0; i < 6; i++) ms = ms * 256 + stored[i]!;
  return ms;
}

/**
 * Makes UUIDv7s from a clock: increasing within the generator, the 12
 * bits after the version a sequence within a millisecond, the 62 bits
 * after the variant from crypto's random source.
 */
export class IdGenerator {
  private lastMs = -1;
  private seq = 0;
  // randomFillSync costs microseconds a call whatever its size, so IDs
  // take their random bytes from a pool filled 10 bytes × 512 at a time
  private pool = Buffer.alloc(5120);
  private used = this.pool.length;

  /** Returns a new ID's stored form, made at ms (unix ms). */
  next(ms: number): Buffer {
    const b = Buffer.alloc(16);
    if (this.used === this.pool.length) {
      randomFillSync(this.pool);
      this.used = 0;
    }
    this.pool.copy(b, 6, this.used, this.used + 10);
    this.pool.fill(0, this.used, this.used + 10); // used bytes do not linger
    this.used += 10;
    if (ms > this.lastMs) {
      this.lastMs = ms;
      this.seq = (b[6]! << 8 | b[7]!) & 0x7ff; // random start, room to count up
    } else if (++this.seq > 0xfff) {
      this.lastMs++; // 4,096 IDs in a millisecond: borrow the next one
      this.seq = 0;
    }
    let t = this.lastMs;
    for (let i = 5; i >= 0; i--) {
      b[i] = t % 256;
      t = Math.floor(t / 256);
    }
    b[6] = 0x70 | (this.seq >> 8);
    b[7] = this.seq & 0xff;
    b[8] = 0x80 | (b[8]! & 0x3f);
    return b;
  }
}
