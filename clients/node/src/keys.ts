// Redis keys (docs/protocol.md, "Keys"): every partition key is the
// partition's tag {<prefix>:<queue>:<n>} and a suffix.

/** The tag T of partition n of queue. */
export function tag(prefix: string, queue: string, n: number): string {
  return `{${prefix}:${queue}:${n}}`;
}

/** The KEYS of enqueue.lua and enqueue_capped.lua for the partition T. */
export function enqueueKeys(T: string): string[] {
  return [`${T}:first`, `${T}:last`, `${T}:feed`, `${T}:feed:rank`, `${T}:feed:msg`, `${T}:scheduled`, `${T}:msg`, `${T}:state`, `${T}:guard`];
}

/** The KEYS of enqueue_one.lua: the guessed tail shard last (-1: no guess, a key that never exists). */
export function enqueueOneKeys(T: string, guess: number): string[] {
  return [`${T}:feed`, `${T}:feed:rank`, `${T}:guard`, `${T}:s:${guess}`];
}

/** The KEYS of get_task.lua. */
export function getTaskKeys(T: string): string[] {
  return [`${T}:msg`, `${T}:state`, `${T}:feed:msg`, `${T}:feed`, `${T}:progress`, `${T}:result`, `${T}:cancel`, `${T}:steps`];
}

export const queuesKey = (prefix: string): string => `${prefix}:queues`;
export const layoutKey = (prefix: string): string => `${prefix}:layout`;
export const protocolKey = (prefix: string): string => `${prefix}:protocol`;
