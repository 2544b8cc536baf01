// The key ring (docs/protocol.md, "Encryption"): AES-256 keys by ID, one
// of them current, read from the JSON form Go's ParseKeyRing reads. The
// keys stay in private fields: no message, toString, inspect or JSON of
// a ring shows one.

import { inspect } from 'node:util';
import { KeyRingError } from './errors.js';

const stdBase64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export class KeyRing {
  readonly #keys: Map<string, Buffer>;
  readonly current: string;

  /** A ring of keys (32 bytes each) by ID (1 to 255 bytes), current naming one of them. */
  constructor(current: string, keys: Map<string, Uint8Array> | Record<string, Uint8Array>) {
    const entries = keys instanceof Map ? [...keys.entries()] : Object.entries(keys);
    this.#keys = new Map();
    if (typeof current !== 'string' || current === '') throw new KeyRingError('shardq: invalid key ring: no current key ID');
    for (const [id, key] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const n = Buffer.byteLength(id, 'utf8');
      if (n < 1 || n > 255) throw new KeyRingError(`shardq: invalid key ring: key ID ${JSON.stringify(id)} is ${n} bytes, want 1 to 255`);
      if (!(key instanceof Uint8Array) || key.length !== 32) {
        const size = key instanceof Uint8Array ? key.length : 0;
        throw new KeyRingError(`shardq: invalid key ring: key ${JSON.stringify(id)} is ${size} bytes, want 32 (AES-256)`);
      }
      this.#keys.set(id, Buffer.from(key));
    }
    if (!this.#keys.has(current)) throw new KeyRingError(`shardq: invalid key ring: current key ${JSON.stringify(current)} is not among its keys`);
    this.current = current;
  }

  /**
   * Reads the JSON form {"current": "<ID>", "keys": {"<ID>": "<standard base64 of 32 bytes>"}},
   * refusing a field it does not know (a typo), as Go's ParseKeyRing does.
   */
  static parse(json: string | Uint8Array): KeyRing {
    let v: unknown;
    try {
      v = JSON.parse(typeof json === 'string' ? json : Buffer.from(json).toString('utf8'));
    } catch (e) {
      // the parser's message may quote the input, which holds keys
      throw new KeyRingError('shardq: invalid key ring: not valid JSON');
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new KeyRingError('shardq: invalid key ring: want a JSON object with current and keys');
    for (const k of Object.keys(v)) {
      if (k !== 'current' && k !== 'keys') throw new KeyRingError(`shardq: invalid key ring: unknown field ${JSON.stringify(k)}, want current and keys`);
    }
    const { current, keys } = v as { current?: unknown; keys?: unknown };
    if (current !== undefined && typeof current !== 'string') throw new KeyRingError('shardq: invalid key ring: current is not a string');
    if (keys !== undefined && (keys === null || typeof keys !== 'object' || Array.isArray(keys))) {
      throw new KeyRingError('shardq: invalid key ring: keys is not an object of key ID to base64');
    }
    const out = new Map<string, Uint8Array>();
    for (const [id, s] of Object.entries((keys ?? {}) as Record<string, unknown>)) {
      if (typeof s !== 'string' || !stdBase64.test(s)) throw new KeyRingError(`shardq: invalid key ring: key ${JSON.stringify(id)} is not standard base64`);
      out.set(id, Buffer.from(s, 'base64'));
    }
    return new KeyRing((current as string | undefined) ?? '', out);
  }

  /** The ring's key IDs, sorted. */
  ids(): string[] {
    return [...this.#keys.keys()];
  }

  /** The key of id, or undefined; for the envelope only. */
  key(id: string): Buffer | undefined {
    return this.#keys.get(id);
  }

  toString(): string {
    return `KeyRing(current ${JSON.stringify(this.current)}, ${this.#keys.size} keys)`;
  }

  toJSON(): unknown {
    return { current: this.current, keyIds: this.ids() };
  }

  [inspect.custom](): string {
    return this.toString();
  }
}
