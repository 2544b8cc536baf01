import { Client } from 'shardq';

const client = new Client({ url: process.env.SHARDQ_REDIS_URL ?? 'redis://127.0.0.1:6390/0' });
const task = await client.enqueue({ type: 'email:send', payload: { to: 'ada@example.com' } });
console.log(`enqueued ${task.id}: ${task.state}`);
await client.close();
