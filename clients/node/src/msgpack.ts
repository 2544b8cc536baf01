// The msgpack a message needs, written in the shortest forms the protocol
// requires (docs/protocol.md, "Scope and conventions"), and a reader of
// the heads and arrays the client reads back. Payloads that are values
// go through @msgpack/msgpack; these bytes are the wire format's own.

const maxUint64 = (1n << 64n) - 1n;

/** Appends msgpack values to a growing buffer. */
export class Writer {
  private buf = Buffer.allocUnsafe(256);
  private n = 0;

  private room(k: number): void {
    if (this.n + k <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.n + k));
    this.buf.copy(next, 0, 0, this.n);
    this.buf = next;
  }

  byte(b: number): this {
    this.room(1);
    this.buf[this.n++] = b;
    return this;
  }

  bytes(b: Uint8Array): this {
    this.room(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
    return this;
  }

  private be(v: number | bigint, size: 2 | 4 | 8): this {
    this.room(size);
    if (size === 2) this.buf.writeUInt16BE(Number(v), this.n);
    else if (size === 4) this.buf.writeUInt32BE(Number(v), this.n);
    else this.buf.writeBigUInt64BE(BigInt.asUintN(64, BigInt(v)), this.n);
    this.n += size;
    return this;
  }

  /** A string (its UTF-8 bytes given) in the shortest form. */
  str(b: Uint8Array): this {
    const n = b.length;
    if (n < 32) this.byte(0xa0 | n);
    else if (n <= 0xff) this.byte(0xd9).byte(n);
    else if (n <= 0xffff) this.byte(0xda).be(n, 2);
    else this.byte(0xdb).be(n, 4);
    return this.bytes(b);
  }

  /** Binary in the shortest form. */
  bin(b: Uint8Array): this {
    const n = b.length;
    if (n <= 0xff) this.byte(0xc4).byte(n);
    else if (n <= 0xffff) this.byte(0xc5).be(n, 2);
    else this.byte(0xc6).be(n, 4);
    return this.bytes(b);
  }

  /** An integer in the shortest form; a bigint for values past 2^53. */
  int(v: number | bigint): this {
    const n = BigInt(v);
    if (n >= 0n) {
      if (n < 128n) return this.byte(Number(n));
      if (n <= 0xffn) return this.byte(0xcc).byte(Number(n));
      if (n <= 0xffffn) return this.byte(0xcd).be(n, 2);
      if (n <= 0xffffffffn) return this.byte(0xce).be(n, 4);
      if (n > maxUint64) throw new RangeError(`msgpack: ${n} is past uint64`);
      return this.byte(0xcf).be(n, 8);
    }
    if (n >= -32n) return this.byte(Number(n) & 0xff);
    if (n >= -128n) return this.byte(0xd0).byte(Number(n) & 0xff);
    if (n >= -32768n) return this.byte(0xd1).be(Number(n) & 0xffff, 2);
    if (n >= -2147483648n) return this.byte(0xd2).be(Number(n) >>> 0, 4);
    return this.byte(0xd3).be(n, 8);
  }

  mapHeader(n: number): this {
    if (n < 16) return this.byte(0x80 | n);
    if (n <= 0xffff) return this.byte(0xde).be(n, 2);
    return this.byte(0xdf).be(n, 4);
  }

  done(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.n));
  }
}

/** Reads msgpack heads from a buffer; ok turns false past its end or on a type it does not read. */
export class Reader {
  pos = 0;
  ok = true;
  constructor(readonly b: Uint8Array) {}

  private take(n: number): Uint8Array {
    if (!this.ok || this.pos + n > this.b.length) {
      this.ok = false;
      return new Uint8Array(0);
    }
    const out = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  private uint(n: 1 | 2 | 4): number {
    const b = this.take(n);
    if (!this.ok) return 0;
    let v = 0;
    for (const x of b) v = v * 256 + x;
    return v;
  }

  byte(): number {
    return this.ok ? (this.take(1)[0] ?? -1) : -1;
  }

  /** A str of any width; undefined when the next value is not one. */
  str(): Uint8Array | undefined {
    const c = this.byte();
    let n: number;
    if (c >= 0xa0 && c <= 0xbf) n = c & 0x1f;
    else if (c === 0xd9) n = this.uint(1);
    else if (c === 0xda) n = this.uint(2);
    else if (c === 0xdb) n = this.uint(4);
    else {
      this.ok = false;
      return undefined;
    }
    const out = this.take(n);
    return this.ok ? out : undefined;
  }

  /** The rest of the buffer. */
  rest(): Uint8Array {
    return this.b.subarray(this.pos);
  }
}
