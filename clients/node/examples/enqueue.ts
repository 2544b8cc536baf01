// Enqueues a few tasks and reads one back. Run it against a Redis of
// yours (never a shared one), with a shardq worker serving the queue to
// see them run:
//
//   npm run build
//   SHARDQ_REDIS_URL=redis://127.0.0.1:6390/0 node dist/examples/enqueue.js

import { Client } from 'shardq';

const client = new Client({ url: process.env.SHARDQ_REDIS_URL ?? 'redis://127.0.0.1:6390/0', partitions: { email: 4 } });
try {
  // an object payload is msgpack-encoded; Go handlers decode it into a struct
  const task = await client.enqueue({ type: 'email:send', queue: 'email', payload: { to: 'ada@example.com' }, maxRetry: 5, retention: 60_000 });
  console.log(`enqueued ${task.id} in partition ${task.partition} of ${task.queue}`);

  // a caller's ID makes the enqueue idempotent: the second call answers the first task
  const order = { type: 'order:ship', payload: new TextEncoder().encode('{"order":42}'), taskId: 'order-42', group: 'tenant-7' };
  const first = await client.enqueue(order);
  const again = await client.enqueue(order);
  console.log(`order-42: duplicate ${first.duplicate}, then ${again.duplicate} (${again.id})`);

  // many tasks in one round trip, each with its own outcome
  const results = await client.enqueueMany([
    { type: 'report:build', payload: { day: 1 }, processIn: 5_000 },
    { type: 'report:build', payload: { day: 2 }, headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } },
  ]);
  for (const r of results) console.log(r.ok ? `${r.task.id}: ${r.task.state}` : `failed: ${r.error.message}`);

  const info = await client.getTask('email', task.id);
  console.log(`${info.id} is ${info.state}, ${info.attempts} attempts so far`);
} finally {
  await client.close();
}
