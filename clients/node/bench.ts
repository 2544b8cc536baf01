// The bench driver of internal/crosslang/contract.md ("Bench driver"):
//   node dist/bench.js --url redis://127.0.0.1:<port>/0 --prefix <p> --queue <q> --tasks <N> --batch <B>
// Enqueues N tasks of type bench with a 64-byte payload: B == 1, N
// enqueue calls one after another; B > 1, enqueueMany calls of B tasks.
// Times the enqueue loop alone (after one warm-up enqueue) and prints
// {"tasks": N, "seconds": <float>}.

import { parseArgs } from 'node:util';
import { Client } from './src/index.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' }, prefix: { type: 'string' }, queue: { type: 'string' },
      tasks: { type: 'string' }, batch: { type: 'string', default: '1' },
    },
  });
  const count = (name: string, v: string | undefined): number => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} ${JSON.stringify(v)}: want a count of 1 or more`);
    return n;
  };
  if (!values.url || !values.prefix || !values.queue) throw new Error('--url, --prefix and --queue are required');
  const tasks = count('tasks', values.tasks);
  const batch = count('batch', values.batch);
  const c = new Client({ url: values.url, prefix: values.prefix });
  const payload = Buffer.alloc(64, 0x61);
  const task = { type: 'bench', queue: values.queue, payload };
  try {
    await c.enqueue(task); // connects, records the protocol version, registers the queue
    const start = process.hrtime.bigint();
    if (batch === 1) {
      for (let i = 0; i < tasks; i++) await c.enqueue(task);
    } else {
      for (let done = 0; done < tasks; done += batch) {
        const res = await c.enqueueMany(Array.from({ length: Math.min(batch, tasks - done) }, () => task));
        const failed = res.find((r) => !r.ok);
        if (failed && !failed.ok) throw failed.error;
      }
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    process.stdout.write(JSON.stringify({ tasks, seconds }) + '\n');
  } finally {
    await c.close();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
