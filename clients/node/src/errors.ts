// The errors of the client. Every one is a ShardqError; the more precise
// classes let a caller tell what went wrong without parsing the message.
// Messages name the value that was wrong, and never a key of a key ring.

export class ShardqError extends Error {
  override name = 'ShardqError';
}

/** A name, an option or a task that breaks docs/protocol.md's rules: nothing was written. */
export class ValidationError extends ShardqError {
  override name = 'ValidationError';
}

/** A payload larger than maxPayloadSize, before compression and encryption. */
export class PayloadTooLargeError extends ValidationError {
  override name = 'PayloadTooLargeError';
}

/** A compression this runtime cannot do, or a stored value in a codec it cannot read. */
export class UnsupportedCodecError extends ShardqError {
  override name = 'UnsupportedCodecError';
}

/** A stored value that does not open: cut short, tampered with, of unknown flags, or too large. */
export class EnvelopeError extends ShardqError {
  override name = 'EnvelopeError';
}

/** A key ring that cannot be used, or a value sealed with a key it lacks. */
export class KeyRingError extends ShardqError {
  override name = 'KeyRingError';
}

/** The prefix's data follows another major protocol version, or its record does not parse. */
export class ProtocolVersionError extends ShardqError {
  override name = 'ProtocolVersionError';
  constructor(message: string, readonly key: string, readonly stored: string, readonly ours: string) {
    super(message);
  }
}

/**
 * Another task of the partition holds the uniqueness ID (Unique, UniqueBy)
 * while its lock lasts: the script refused the task (code -2).
 */
export class DuplicateUniqueError extends ShardqError {
  override name = 'DuplicateUniqueError';
  constructor(message: string, readonly uniqueId: string, readonly queue: string) {
    super(message);
  }
}

/** The queue is at its MaxDepth (code -3) or the task's group at GroupMaxDepth (code -4). */
export class QueueFullError extends ShardqError {
  override name = 'QueueFullError';
}

/** The partition stayed closed (code -5) after the client routed the task again 4 times. */
export class PartitionClosedError extends ShardqError {
  override name = 'PartitionClosedError';
}

/** GetTask found the task in no partition of the queue. */
export class TaskNotFoundError extends ShardqError {
  override name = 'TaskNotFoundError';
}

/** Redis failed the call, or answered what the protocol does not allow. */
export class RedisCallError extends ShardqError {
  override name = 'RedisCallError';
}
