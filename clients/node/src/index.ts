// shardq: the TypeScript producer client of shardq, the Go task queue on
// Redis. docs/protocol.md in the shardq repository is what it implements.

export { Client, type ClientOptions, type EnqueuedTask, type EnqueueResult } from './client.js';
export type { Task, TaskOptions, Moment } from './task.js';
export type { TaskInfo, TaskState } from './taskinfo.js';
export { KeyRing } from './keyring.js';
export { hasZstd, type Compression } from './envelope.js';
export { protocolVersionText as protocolVersion } from './protocol.js';
export {
  ShardqError, ValidationError, PayloadTooLargeError, UnsupportedCodecError, EnvelopeError, KeyRingError,
  ProtocolVersionError, DuplicateUniqueError, QueueFullError, PartitionClosedError, TaskNotFoundError, RedisCallError,
} from './errors.js';
