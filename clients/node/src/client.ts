// The producer: enqueues tasks that shardq's Go workers run, as
// docs/protocol.md says a producer must, and reads a task back.

import { inspect } from 'node:util';
import { Redis, type Cluster } from 'ioredis';
import { pipeline, single, isRefused, type Call, type RedisConnection, type Reply } from './calls.js';
import { codes, enqueueCall, enqueueOneCall, type Group, type Limits } from './enqueue.js';
import { checkCompression, Codec, defaultCompressAbove, defaultMaxPayloadSize, type Compression } from './envelope.js';
import {
  DuplicateUniqueError, PartitionClosedError, QueueFullError, RedisCallError, ShardqError, TaskNotFoundError, ValidationError,
} from './errors.js';
import { IdGenerator, storedId } from './ids.js';
import { getTaskKeys, layoutKey, queuesKey, tag } from './keys.js';
import { KeyRing } from './keyring.js';
import { checkName } from './names.js';
import { claim } from './protocol.js';
import { maxPartitions, parseCount, parseLayout, RouteTable } from './route.js';
import { getTask as getTaskScript } from './scripts.generated.js';
import { build, scriptPlain, type Built, type BuildSettings, type Task } from './task.js';
import { emptyMessage } from './message.js';
import { fromGetTask, infoOf, type TaskInfo } from './taskinfo.js';

export interface ClientOptions {
  /** A Redis URL (redis://host:port/db); the client opens and closes its own connection. */
  url?: string;
  /** An ioredis connection (Redis or Cluster) to use instead; close() leaves it open. */
  redis?: RedisConnection;
  /** The prefix of every key, 'shardq' by default: producers and workers that share tasks share it. */
  prefix?: string;
  /** Partitions per queue when no operator set a layout; 1 for a queue not named. */
  partitions?: Record<string, number>;
  /** 'none' (the default), or 'small' (zstd, Node v22.15 / v23.8 and later); 'fast' (S2) is refused. */
  compression?: Compression;
  /** The least payload size compressed, 512 by default. */
  compressAbove?: number;
  /** Encrypt every payload (AES-256-GCM): a KeyRing, or its JSON form. */
  keyRing?: KeyRing | string;
  /** With a key ring, read values that are not encrypted (a migration to encryption). */
  allowPlaintext?: boolean;
  /** The largest payload, before compression and encryption: 1 MiB by default. */
  maxPayloadSize?: number;
  /** The shard size every process of the deployment uses: 1,000 by default. */
  shardSize?: number;
  /** The feed cap every process of the deployment uses: 10,000 by default. */
  feedSize?: number;
  /** How long (ms) a caller's task ID stays claimed, 24 hours by default; producers must agree on it. */
  idTtl?: number;
  /** Write every message in the full form (while workers older than shardq v0.1.0 run). */
  fullMessages?: boolean;
  /** Headers every task gets (a task's own win), or a function called per task, e.g. for the current trace context. */
  headers?: Record<string, string> | (() => Record<string, string> | undefined);
}

/** An enqueued task; duplicate is true when a task with its taskId was there, whose info this is. */
export type EnqueuedTask = TaskInfo & { duplicate: boolean };

/** One task's outcome of enqueueMany: its info, or why it was not enqueued. */
export type EnqueueResult = { ok: true; task: EnqueuedTask } | { ok: false; error: ShardqError };

/** How long the client trusts that a queue has no MaxDepth or GroupMaxDepth. */
const depthCacheMs = 1000;
/** How often a task a closed partition refused is routed again. */
const closedTries = 4;
const refusedPatienceMs = 5000;
const refusedWaitMs = 50;
const refusedMaxWaitMs = 500;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function int(what: string, v: number | undefined, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  if (!Number.isSafeInteger(v) || v < min || v > max) throw new ValidationError(`shardq: ${what} ${String(v)}: want an integer of ${min} to ${max}`);
  return v;
}

interface Outcome {
  info?: TaskInfo;
  error?: ShardqError;
  code?: number;
}

export class Client {
  readonly prefix: string;
  readonly #redis: RedisConnection;
  readonly #own: boolean;
  readonly #codec: Codec;
  readonly #settings: BuildSettings;
  readonly #limits: Limits;
  readonly #routes: RouteTable;
  readonly #headers: ClientOptions['headers'];
  readonly #depth = new Map<string, { max: number; keyMax: number; at: number }>();
  readonly #tails = new Map<string, number>();
  readonly #ids = new IdGenerator();
  readonly #partitions: Record<string, number>;
  #claimed: Promise<void> | undefined;

  constructor(opts: ClientOptions = {}) {
    this.prefix = checkName('prefix', opts.prefix ?? 'shardq');
    const partitions: Record<string, number> = {};
    for (const [q, n] of Object.entries(opts.partitions ?? {})) {
      checkName('queue', q);
      partitions[q] = int(`partitions of ${JSON.stringify(q)}`, n, 1, 1, maxPartitions);
    }
    this.#partitions = partitions;
    const compression = opts.compression ?? 'none';
    checkCompression(compression);
    const ring = typeof opts.keyRing === 'string' ? KeyRing.parse(opts.keyRing) : opts.keyRing;
    if (ring !== undefined && !(ring instanceof KeyRing)) throw new ValidationError('shardq: keyRing: want a KeyRing or its JSON form');
    this.#codec = new Codec({
      compression, ring, allowPlaintext: opts.allowPlaintext ?? false,
      compressAbove: int('compressAbove', opts.compressAbove, defaultCompressAbove, 0, 2 ** 31),
    });
    this.#settings = {
      codec: this.#codec, fullMessages: opts.fullMessages ?? false,
      maxPayloadSize: int('maxPayloadSize', opts.maxPayloadSize, defaultMaxPayloadSize, 1, 2 ** 31),
      idTtlMs: int('idTtl', opts.idTtl, 86_400_000, 1, Number.MAX_SAFE_INTEGER),
    };
    this.#limits = {
      shardSize: int('shardSize', opts.shardSize, 1000, 1, 7000),
      feedSize: int('feedSize', opts.feedSize, 10_000, 1, 1_000_000_000),
    };
    this.#headers = opts.headers;
    this.#routes = new RouteTable(partitions);
    if (opts.redis && opts.url) throw new ValidationError('shardq: give url or redis, not both');
    if (!opts.redis && !opts.url) throw new ValidationError('shardq: give url (redis://host:port/db) or redis (an ioredis connection)');
    if (opts.redis) {
      const prefixed = (opts.redis as { options?: { keyPrefix?: string } }).options?.keyPrefix;
      if (prefixed) throw new ValidationError(`shardq: the ioredis connection has keyPrefix ${JSON.stringify(prefixed)}, which the scripts' arguments would not carry: use the prefix option instead`);
      this.#redis = opts.redis;
      this.#own = false;
    } else {
      this.#redis = new Redis(opts.url!, { lazyConnect: true }); // connects with the first call
      this.#own = true;
    }
  }

  /** The connection the client uses. */
  get redis(): RedisConnection {
    return this.#redis;
  }

  /** Closes the connection the client opened from a URL; a connection given to it stays open. */
  async close(): Promise<void> {
    if (this.#own) await this.#redis.quit();
  }

  /**
   * Enqueues one task. A task whose taskId another task of the queue
   * holds is not enqueued again: the result is the original task's info,
   * with duplicate true. Any other refusal throws a ShardqError:
   * ValidationError (nothing written), DuplicateUniqueError,
   * QueueFullError, PartitionClosedError, RedisCallError.
   */
  async enqueue(task: Task): Promise<EnqueuedTask> {
    const [r] = await this.#run([task], true);
    if (!r!.ok) throw r!.error;
    return r!.task;
  }

  /**
   * Enqueues tasks in one round trip (one script call per partition,
   * pipelined), once the client knows its queues. Each task has its own
   * outcome, in order; a task that fails validation fails alone. Rejects
   * only when Redis could not be reached, or the protocol version refuses.
   */
  async enqueueMany(tasks: readonly Task[]): Promise<EnqueueResult[]> {
    if (!Array.isArray(tasks)) throw new ValidationError('shardq: enqueueMany wants an array of tasks');
    return this.#run(tasks, false);
  }

  /**
   * Reads what queue holds of the task id, in every partition of the
   * queue (one round trip for them all, after one reading the queue's
   * count): its state, attempts, times, group, headers, last error and
   * result, opened through the envelope. Throws TaskNotFoundError when no
   * partition holds it.
   */
  async getTask(queue: string, id: string): Promise<TaskInfo> {
    checkName('queue', queue);
    if (typeof id !== 'string' || id === '') throw new ValidationError(`shardq: task ID ${JSON.stringify(id)}: want a non-empty string`);
    const [reg, lay] = await this.#pipeline([
      { kind: 'command', name: 'hget', args: [queuesKey(this.prefix), queue] },
      { kind: 'command', name: 'hget', args: [layoutKey(this.prefix), queue] },
    ]);
    if (reg!.err || lay!.err) throw new RedisCallError(`shardq: read the registry of queue ${JSON.stringify(queue)}: ${(reg!.err ?? lay!.err)!.message}`);
    const count = parseCount(reg!.value as string | null);
    if (reg!.value === null) throw new TaskNotFoundError(`shardq: task ${JSON.stringify(id)} not found: no queue ${JSON.stringify(queue)} in the registry`);
    const n = parseLayout(lay!.value as string | null)?.serve ?? Math.max(count ?? 1, this.#partitions[queue] ?? 1);
    const sid = storedId(id);
    const calls: Call[] = [];
    for (let p = 0; p < n; p++) {
      calls.push({ kind: 'script', script: getTaskScript, keys: getTaskKeys(tag(this.prefix, queue, p)), args: [sid], buffers: true });
    }
    const replies = await this.#pipeline(calls);
    for (let p = 0; p < n; p++) {
      const r = replies[p]!;
      if (r.err) throw new RedisCallError(`shardq: get task ${JSON.stringify(id)} in queue ${JSON.stringify(queue)}: ${r.err.message}`);
      const ti = fromGetTask(r.value, queue, p, sid, this.#codec, this.#settings.maxPayloadSize);
      if (ti) return ti;
    }
    throw new TaskNotFoundError(`shardq: task ${JSON.stringify(id)} not found in queue ${JSON.stringify(queue)}`);
  }

  toString(): string {
    return `shardq.Client(prefix ${JSON.stringify(this.prefix)})`;
  }

  toJSON(): unknown {
    return { prefix: this.prefix };
  }

  [inspect.custom](): string {
    return this.toString();
  }

  async #pipeline(calls: Call[]): Promise<Reply[]> {
    try {
      if (calls.length > 1 && (this.#redis as { isCluster?: boolean }).isCluster) {
        // ioredis pipelines only to one node: a cluster's calls go side by side, each to its slot's node
        return await Promise.all(calls.map((c) => this.#pipeline([c]).then((r) => r[0]!)));
      }
      if (calls.length === 1) {
        try {
          return [{ value: await single(this.#redis, calls[0]!) }];
        } catch (e) {
          if (e instanceof Error && e.name === 'ReplyError') return [{ err: e }]; // Redis answered an error
          throw e;
        }
      }
      return await pipeline(this.#redis, calls);
    } catch (e) {
      throw new RedisCallError(`shardq: Redis call failed: ${(e as Error).message}`);
    }
  }

  /** Records the protocol version before the first write, once. */
  async #claim(): Promise<void> {
    if (!this.#claimed) {
      this.#claimed = claim(this.#redis, this.prefix).catch((e: unknown) => {
        this.#claimed = undefined; // refused or failed: the next call checks again
        throw e instanceof ShardqError ? e : new RedisCallError(`shardq: record the protocol version: ${(e as Error).message}`);
      });
    }
    return this.#claimed;
  }

  async #run(tasks: readonly Task[], one: boolean): Promise<EnqueueResult[]> {
    const now = Date.now();
    const defaults = typeof this.#headers === 'function' ? this.#headers() : this.#headers;
    const settings = { ...this.#settings, defaultHeaders: defaults };
    const outcomes: Outcome[] = tasks.map(() => ({}));
    const live: Built[] = [];
    tasks.forEach((t, i) => {
      try {
        live.push(build(t, i, settings, now, (ms) => this.#ids.next(ms)));
      } catch (e) {
        if (one || !(e instanceof ShardqError)) throw e;
        outcomes[i]!.error = e;
      }
    });
    if (live.length > 0) {
      await this.#claim();
      const guessing = [...new Set(live.map((t) => t.queue))].filter((q) => this.#routes.guessing(q));
      if (guessing.length > 0) await this.#readLayouts(guessing); // quirk 13: the layout before the first route
      let todo = live;
      for (let attempt = 1; ; attempt++) {
        await this.#send(this.#group(todo), outcomes, one);
        const closed = todo.filter((t) => outcomes[t.index]!.code === codes.closed);
        if (closed.length === 0) break;
        if (attempt > closedTries) {
          for (const t of closed) {
            outcomes[t.index] = { error: new PartitionClosedError(`shardq: partition ${t.partition} of queue ${JSON.stringify(t.queue)} is closed, still after ${closedTries} tries`) };
          }
          break;
        }
        if (attempt > 1) await sleep(attempt * refusedWaitMs);
        await this.#readLayouts([...new Set(closed.map((t) => t.queue))]);
        todo = closed;
      }
      await this.#originals(live, outcomes);
    }
    return outcomes.map((o): EnqueueResult => (o.error ? { ok: false, error: o.error } : { ok: true, task: { ...o.info!, duplicate: o.code === codes.duplicateId } }));
  }

  async #readLayouts(queues: string[]): Promise<void> {
    const [r] = await this.#pipeline([{ kind: 'command', name: 'hmget', args: [layoutKey(this.prefix), ...queues] }]);
    if (r!.err) throw new RedisCallError(`shardq: read the layout of ${queues.join(', ')}: ${r!.err.message}`);
    this.#routes.store(queues, r!.value as (string | null)[]);
  }

  /** Picks each task's partition and groups the tasks by partition. */
  #group(tasks: Built[]): Group[] {
    const groups = new Map<string, Group>();
    for (const t of tasks) {
      t.partition = this.#routes.pick(t.queue, t.route);
      t.info.partition = t.partition;
      const T = tag(this.prefix, t.queue, t.partition);
      let g = groups.get(T);
      if (!g) groups.set(T, (g = { queue: t.queue, partition: t.partition, T, tasks: [] }));
      g.tasks.push(t);
    }
    return [...groups.values()];
  }

  #capped(queue: string): boolean {
    const e = this.#depth.get(queue);
    return !e || e.max > 0 || e.keyMax > 0 || Date.now() - e.at >= depthCacheMs;
  }

  /** Sends the groups, one script call each, in one round trip; groups Redis refused unrun go again. */
  async #send(groups: Group[], outcomes: Outcome[], one: boolean): Promise<void> {
    const g0 = groups[0]!;
    if (one && groups.length === 1 && g0.tasks.length === 1 && scriptPlain(g0.tasks[0]!) && this.#routes.known(g0.queue) && !this.#capped(g0.queue)) {
      if (await this.#sendOne(g0, outcomes)) return;
    }
    const giveUp = Date.now() + refusedPatienceMs;
    for (let attempt = 1; ; attempt++) {
      const refused = await this.#sendOnce(groups, outcomes);
      if (refused.length === 0) return;
      if (Date.now() >= giveUp) {
        for (const g of refused) for (const t of g.tasks) outcomes[t.index] = { error: new RedisCallError(`shardq: enqueue ${JSON.stringify(g.queue)}: Redis refused the call for ${refusedPatienceMs} ms (${outcomes[t.index]!.error?.message})`) };
        return;
      }
      await sleep(Math.min(attempt * refusedWaitMs, refusedMaxWaitMs));
      groups = refused;
    }
  }

  /** enqueue_one: true when it settled the task, false to send it the general way. */
  async #sendOne(g: Group, outcomes: Outcome[]): Promise<boolean> {
    const t = g.tasks[0]!;
    const guess = this.#tails.get(g.T) ?? -1;
    const [r] = await this.#pipeline([enqueueOneCall(g.T, t, this.#limits, guess)]);
    if (r!.err) {
      if (isRefused(r!.err)) return false;
      throw new RedisCallError(`shardq: enqueue ${JSON.stringify(g.queue)}: ${r!.err.message}`);
    }
    const reply = Number(r!.value);
    if (reply === codes.closed) return false; // the general call, then routing again
    if (reply === codes.guessed) this.#learn(g.T, guess, guess, true);
    else if (Number.isSafeInteger(reply) && reply >= 0) this.#learn(g.T, guess, Math.floor(reply / 2), reply % 2 === 1);
    else throw new RedisCallError(`shardq: enqueue ${JSON.stringify(g.queue)}: unexpected reply ${String(r!.value)}`);
    outcomes[t.index] = { info: t.info, code: codes.pending };
    return true;
  }

  /** Records the tail shard a reply named: only forward from a reply that used the guess. */
  #learn(T: string, guess: number, tail: number, hit: boolean): void {
    const cur = this.#tails.get(T) ?? -1;
    if (cur === tail || ((hit || cur !== guess) && cur > tail)) return;
    this.#tails.set(T, tail);
  }

  /** One round trip: the registry entries and layouts due, then a script call per group. Returns the groups refused unrun. */
  async #sendOnce(groups: Group[], outcomes: Outcome[]): Promise<Group[]> {
    const queues = [...new Set(groups.map((g) => g.queue))];
    const calls: Call[] = [];
    const register = queues.filter((q) => !this.#routes.isRegistered(q));
    for (const q of register) calls.push({ kind: 'command', name: 'hset', args: [queuesKey(this.prefix), q, String(this.#routes.count(q))] });
    const stale = queues.filter((q) => this.#routes.stale(q));
    if (stale.length > 0) calls.push({ kind: 'command', name: 'hmget', args: [layoutKey(this.prefix), ...stale] });
    const first = calls.length;
    const capped = groups.map((g) => this.#capped(g.queue));
    const counts = register.map((q) => this.#routes.count(q));
    groups.forEach((g, i) => calls.push(enqueueCall(g, this.#limits, capped[i]!, this.#routes.count(g.queue))));
    const replies = await this.#pipeline(calls);
    register.forEach((q, i) => {
      if (!replies[i]!.err) this.#routes.remember(q, counts[i]!);
    });
    if (stale.length > 0 && !replies[register.length]!.err) this.#routes.store(stale, replies[register.length]!.value as (string | null)[]);
    const refused: Group[] = [];
    groups.forEach((g, i) => {
      const r = replies[first + i]!;
      if (r.err) {
        const error = new RedisCallError(`shardq: enqueue ${JSON.stringify(g.queue)}: ${r.err.message}`);
        for (const t of g.tasks) outcomes[t.index] = { error };
        if (isRefused(r.err)) refused.push(g);
        return;
      }
      this.#collect(g, capped[i]!, r.value, outcomes);
    });
    return refused;
  }

  /** Reads a group's reply into the outcomes. */
  #collect(g: Group, capped: boolean, value: unknown, outcomes: Outcome[]): void {
    const n = g.tasks.length;
    const replies = Array.isArray(value) ? value.map(Number) : [];
    if (replies.length !== (capped ? n + 2 : n)) {
      const error = new RedisCallError(`shardq: enqueue ${JSON.stringify(g.queue)}: ${replies.length} replies for ${n} tasks`);
      for (const t of g.tasks) outcomes[t.index] = { error };
      return;
    }
    let max = 0;
    let keyMax = 0;
    if (capped) {
      [max, keyMax] = [replies[n]!, replies[n + 1]!];
      this.#depth.set(g.queue, { max, keyMax, at: Date.now() });
    }
    g.tasks.forEach((t, j) => {
      const code = replies[j]!;
      const q = JSON.stringify(g.queue);
      switch (code) {
        case codes.pending:
          outcomes[t.index] = { info: t.info, code };
          break;
        case codes.scheduled:
          t.info.state = 'scheduled';
          outcomes[t.index] = { info: t.info, code };
          break;
        case codes.duplicateId:
          outcomes[t.index] = { info: t.info, code };
          break;
        case codes.duplicateUnique:
          outcomes[t.index] = { code, error: new DuplicateUniqueError(`shardq: task is a duplicate: uniqueness ID ${JSON.stringify(t.unique)} is locked in queue ${q}`, t.unique, g.queue) };
          break;
        case codes.queueFull:
          outcomes[t.index] = { code, error: new QueueFullError(`shardq: queue ${q} has MaxDepth ${max} (partition ${g.partition} holds its share)`) };
          break;
        case codes.groupFull:
          outcomes[t.index] = { code, error: new QueueFullError(`shardq: group ${JSON.stringify(t.info.group)} of queue ${q} has GroupMaxDepth ${keyMax} (in partition ${g.partition})`) };
          break;
        case codes.closed:
          outcomes[t.index] = { code };
          break;
        default:
          outcomes[t.index] = { code, error: new RedisCallError(`shardq: enqueue ${q}: unexpected reply ${code}`) };
      }
    });
  }

  /** Reads, in one round trip, the task that holds each duplicate ID: the outcome is its info. */
  async #originals(live: Built[], outcomes: Outcome[]): Promise<void> {
    const dups = live.filter((t) => outcomes[t.index]!.code === codes.duplicateId);
    if (dups.length === 0) return;
    const calls: Call[] = dups.map((t) => ({ kind: 'script', script: getTaskScript, keys: getTaskKeys(tag(this.prefix, t.queue, t.partition)), args: [t.id], buffers: true }));
    let replies: Reply[];
    try {
      replies = await this.#pipeline(calls);
    } catch (e) {
      replies = dups.map(() => ({ err: e as Error }));
    }
    dups.forEach((t, i) => {
      const r = replies[i]!;
      const q = JSON.stringify(t.queue);
      if (r.err) {
        outcomes[t.index] = { code: codes.duplicateId, error: new RedisCallError(`shardq: task ID ${JSON.stringify(t.info.id)} is taken in queue ${q}, and reading the task that holds it failed: ${r.err.message}`) };
        return;
      }
      let ti: TaskInfo | undefined;
      try {
        ti = fromGetTask(r.value, t.queue, t.partition, t.id, this.#codec, this.#settings.maxPayloadSize);
      } catch (e) {
        outcomes[t.index] = { code: codes.duplicateId, error: new RedisCallError(`shardq: task ID ${JSON.stringify(t.info.id)} is taken in queue ${q}: ${(e as Error).message}`) };
        return;
      }
      // a task the partition no longer holds (finished, not kept): its ID, queue and partition alone
      outcomes[t.index] = { code: codes.duplicateId, info: ti ?? { ...infoOf(t.queue, t.partition, { ...emptyMessage(), id: t.id }), state: '' } };
    });
  }
}

export type { Cluster };
