// Choosing a partition (docs/protocol.md, "Choosing a partition"): the
// route count from the layout or the configured count, FNV-1a-32 of a
// task's route key, round-robin from 1 for tasks without one, and what
// this client knows of each queue's registry entry and layout.

export const maxPartitions = 1024;
/** How long a layout read is trusted (the Go producer's LayoutRefresh). */
export const layoutRefreshMs = 2000;
/** How often a queue's registry entry is written again (the Go producer's RegistryRefresh). */
export const registryRefreshMs = 60_000;

/** FNV-1a, 32 bits, of b. */
export function fnv1a32(b: Uint8Array): number {
  let h = 2166136261;
  for (const c of b) h = Math.imul(h ^ c, 16777619) >>> 0;
  return h >>> 0;
}

/** The partition of n for a task with route key key. */
export function pick(key: Uint8Array, n: number): number {
  return fnv1a32(key) % n;
}

const count = /^[0-9]+$/;

/** Parses a layout value "<route>/<serve>", 1 <= route <= serve <= 1024; undefined when it does not parse. */
export function parseLayout(v: string | null | undefined): { route: number; serve: number } | undefined {
  if (typeof v !== 'string') return undefined;
  const parts = v.split('/');
  if (parts.length !== 2 || !count.test(parts[0]!) || !count.test(parts[1]!)) return undefined;
  const route = Number(parts[0]);
  const serve = Number(parts[1]);
  if (route < 1 || serve < route || serve > maxPartitions) return undefined;
  return { route, serve };
}

/** Parses a registry value: a partition count of 1 to 1024. */
export function parseCount(v: string | null | undefined): number | undefined {
  if (typeof v !== 'string' || !count.test(v)) return undefined;
  const n = Number(v);
  return n >= 1 && n <= maxPartitions ? n : undefined;
}

interface LayoutEntry {
  route?: number | undefined; // set when the operator's layout parsed
  at: number;
}

/** One producer's routes. */
export class RouteTable {
  private rr = 0;
  private readonly layouts = new Map<string, LayoutEntry>();
  private readonly registered = new Map<string, { n: number; at: number }>();

  constructor(private readonly partitions: Readonly<Record<string, number>>, private readonly clock: () => number = Date.now) {}

  /** How many partitions queue's new tasks go to. */
  count(queue: string): number {
    const l = this.layouts.get(queue);
    if (l?.route !== undefined) return l.route;
    return Math.max(this.partitions[queue] ?? 1, 1);
  }

  /** The partition of a task of queue with route key key (null: round-robin). */
  pick(queue: string, key: Uint8Array | null): number {
    const n = this.count(queue);
    if (n === 1) return 0;
    if (key === null) {
      this.rr = (this.rr + 1) % 0x100000000;
      return this.rr % n;
    }
    return pick(key, n);
  }

  /** Whether routing queue now would guess: no layout read yet, and more than one partition configured. */
  guessing(queue: string): boolean {
    return (this.partitions[queue] ?? 1) > 1 && !this.layouts.has(queue);
  }

  stale(queue: string): boolean {
    const l = this.layouts.get(queue);
    return !l || this.clock() - l.at >= layoutRefreshMs;
  }

  isRegistered(queue: string): boolean {
    const r = this.registered.get(queue);
    return !!r && r.n === this.count(queue) && this.clock() - r.at < registryRefreshMs;
  }

  /** Whether a call to queue need carry neither its registry entry nor a layout read. */
  known(queue: string): boolean {
    return this.isRegistered(queue) && !this.stale(queue);
  }

  /** Stores an HMGET reply of the layouts of queues. */
  store(queues: readonly string[], values: ReadonlyArray<string | null>): void {
    const at = this.clock();
    queues.forEach((q, i) => this.layouts.set(q, { route: parseLayout(values[i])?.route, at }));
  }

  remember(queue: string, n: number): void {
    this.registered.set(queue, { n, at: this.clock() });
  }
}
