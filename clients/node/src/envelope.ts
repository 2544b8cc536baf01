// The payload envelope (docs/protocol.md, "The payload envelope"): how a
// value is stored, plain or wrapped: compressed (zstd here; S2 is not
// available in Node) and sealed with AES-256-GCM under a key ring.

import { createCipheriv, createDecipheriv, randomFillSync } from 'node:crypto';
import zlib from 'node:zlib';
import { EnvelopeError, KeyRingError, UnsupportedCodecError } from './errors.js';
import type { KeyRing } from './keyring.js';

export const magic = 0xc1;
const codecMask = 0x03;
const codecS2 = 0x01;
const codecZstd = 0x02;
const encrypted = 0x04;
const nonceSize = 12;
const tagSize = 16;
const zstdMagic = Buffer.of(0x28, 0xb5, 0x2f, 0xfd);

/** What a value is, bound into its encryption's associated data. */
export enum Use {
  Payload = 1,
  Result = 2,
  Progress = 3,
  Step = 4,
  Error = 5,
}

/** none: stored as is; small: zstd; fast: S2, which this client cannot write. */
export type Compression = 'none' | 'small' | 'fast';

/** The least size compressed by default, and the default bound of a payload. */
export const defaultCompressAbove = 512;
export const defaultMaxPayloadSize = 1 << 20;

type ZstdZlib = typeof zlib & {
  zstdCompressSync(b: Uint8Array, o?: object): Buffer;
  zstdDecompressSync(b: Uint8Array, o?: object): Buffer;
};

/** Whether this runtime's zlib has zstd (Node v22.15 / v23.8 and later). */
export function hasZstd(): boolean {
  return typeof (zlib as Partial<ZstdZlib>).zstdCompressSync === 'function';
}

function noZstd(what: string): UnsupportedCodecError {
  return new UnsupportedCodecError(`shardq: ${what} needs zstd, which Node ${process.version} lacks: use Node v22.15, v23.8 or later`);
}

/** Checks that this runtime can compress as c says; throws a clear error when it cannot. */
export function checkCompression(c: Compression): void {
  if (c === 'none') return;
  if (c === 'small') {
    if (!hasZstd()) throw noZstd('compression "small"');
    return;
  }
  if (c === 'fast') {
    throw new UnsupportedCodecError('shardq: compression "fast" (S2) is not supported by the Node client: use "small" (zstd) or "none"');
  }
  throw new UnsupportedCodecError(`shardq: unknown compression ${JSON.stringify(c)}, want "none" or "small"`);
}

/** A zstd frame of b, without its magic, at zstd's fastest level and without a checksum, as Go writes it. */
function zstdBody(b: Uint8Array): Buffer {
  const z = zlib as ZstdZlib;
  const c = zlib.constants as Record<string, number>;
  const frame = z.zstdCompressSync(b, {
    params: { [c.ZSTD_c_compressionLevel!]: 1, [c.ZSTD_c_checksumFlag!]: 0 },
    pledgedSrcSize: b.length,
  });
  return frame.subarray(zstdMagic.length);
}

function unZstd(body: Uint8Array, limit: number): Buffer {
  if (!hasZstd()) throw noZstd('a zstd-compressed value (envelope codec 0x02)');
  try {
    return (zlib as ZstdZlib).zstdDecompressSync(Buffer.concat([zstdMagic, body]), { maxOutputLength: limit });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new EnvelopeError(`shardq: corrupt envelope: zstd body decompresses past the limit of ${limit} bytes`);
    }
    throw new EnvelopeError(`shardq: corrupt envelope: zstd: ${err.message}`);
  }
}

function aad(id: Uint8Array, use: Use, flags: number): Buffer {
  return Buffer.concat([Buffer.of(use, flags), id]);
}

export interface CodecOptions {
  compression: Compression;
  compressAbove: number;
  ring?: KeyRing | undefined;
  /** With a ring, open values that are not encrypted (a migration to encryption). */
  allowPlaintext?: boolean;
  /** Fills a nonce; crypto's random source by default. Only the golden vectors set it. */
  nonce?: (b: Buffer) => void;
}

/** Wraps and opens values by its options. */
export class Codec {
  constructor(readonly opts: CodecOptions) {}

  /** The stored form of b, a value of the task id (stored form) for use. */
  wrap(b: Uint8Array, id: Uint8Array, use: Use): Buffer {
    const { compression, compressAbove, ring } = this.opts;
    const compressing = compression !== 'none' && b.length >= compressAbove && b.length > 0;
    let body: Uint8Array = b;
    let flags = 0;
    if (compressing) {
      if (compression !== 'small') checkCompression(compression);
      if (!hasZstd()) throw noZstd('compression "small"');
      const z = zstdBody(b);
      if (z.length < b.length) {
        body = z;
        flags = codecZstd;
      }
    }
    if (!ring) {
      if (flags !== 0) return Buffer.concat([Buffer.of(magic, flags), body]);
      if (b.length > 0 && b[0] === magic) return Buffer.concat([Buffer.of(magic, 0), b]);
      return Buffer.from(b);
    }
    const kid = Buffer.from(ring.current, 'utf8');
    const key = ring.key(ring.current)!;
    const nonce = Buffer.alloc(nonceSize);
    (this.opts.nonce ?? randomFillSync)(nonce);
    flags |= encrypted;
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    cipher.setAAD(aad(id, use, flags));
    const sealed = Buffer.concat([cipher.update(body), cipher.final(), cipher.getAuthTag()]);
    return Buffer.concat([Buffer.of(magic, flags, kid.length), kid, nonce, sealed]);
  }

  /** The value b stores: b itself when plain, else opened, at most limit bytes once decompressed. */
  open(b: Uint8Array, id: Uint8Array, use: Use, limit = defaultMaxPayloadSize): Buffer {
    const { ring, allowPlaintext } = this.opts;
    const isSealed = b.length >= 2 && b[0] === magic && (b[1]! & encrypted) !== 0;
    if (ring && !allowPlaintext && use !== Use.Error && !isSealed) {
      throw new KeyRingError(`shardq: a ${Use[use]!.toLowerCase()} of ${b.length} bytes is not encrypted, though a key ring is configured (allowPlaintext accepts such values during a migration to encryption)`);
    }
    if (b.length === 0 || b[0] !== magic) return Buffer.from(b);
    if (b.length < 2) throw new EnvelopeError(`shardq: corrupt envelope: ${b.length} bytes`);
    const flags = b[1]!;
    if (flags === 0x03) {
      throw new UnsupportedCodecError('shardq: a value compressed with S2 against a dictionary (envelope codec 0x03) cannot be read by the Node client');
    }
    if ((flags & ~(codecMask | encrypted)) !== 0 || (flags & codecMask) === codecMask) {
      throw new EnvelopeError(`shardq: corrupt envelope: ${b.length} bytes, flags 0x${flags.toString(16).padStart(2, '0')}`);
    }
    let body: Buffer = Buffer.from(b.subarray(2));
    if (flags & encrypted) {
      const n = b.length >= 3 ? b[2]! : 0;
      if (n === 0 || b.length < 3 + n) throw new EnvelopeError(`shardq: corrupt envelope: encrypted, but its key ID is cut short (${b.length} bytes)`);
      const kid = Buffer.from(b.subarray(3, 3 + n)).toString('utf8');
      if (!ring) throw new KeyRingError(`shardq: encrypted with key ${JSON.stringify(kid)}, and no key ring is configured to decrypt it`);
      const key = ring.key(kid);
      if (!key) throw new KeyRingError(`shardq: encrypted with key ${JSON.stringify(kid)}, which is not in the key ring`);
      const rest = b.subarray(3 + n);
      if (rest.length < nonceSize + tagSize) throw new EnvelopeError(`shardq: corrupt envelope: encrypted with key ${JSON.stringify(kid)}, cut short at ${b.length} bytes`);
      try {
        const d = createDecipheriv('aes-256-gcm', key, rest.subarray(0, nonceSize));
        d.setAAD(aad(id, use, flags));
        d.setAuthTag(rest.subarray(rest.length - tagSize));
        body = Buffer.concat([d.update(rest.subarray(nonceSize, rest.length - tagSize)), d.final()]);
      } catch {
        throw new EnvelopeError(`shardq: corrupt envelope: encrypted with key ${JSON.stringify(kid)}, does not authenticate: tampered with, or not this task's`);
      }
    }
    switch (flags & codecMask) {
      case codecS2:
        throw new UnsupportedCodecError('shardq: an S2-compressed value (envelope codec 0x01) cannot be read by the Node client: have its writer use compression "small" (zstd) or "none"');
      case codecZstd:
        return unZstd(body, limit);
    }
    return body;
  }
}
