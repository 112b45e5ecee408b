// Where the bytes of bench/alloc-probe.mjs go: `node bench/heap-diff.mjs <variant.heapprofile> <none.heapprofile>
// [requests]` prints, per package (this module's dist/ as one), the bytes per request a variant's sampling heap
// profile holds beyond the no-limiter app's. The profiles come from one process each:
// BENCH_HEAP_PROFILE=<file> BENCH_ALLOC=4000,8000,50,4000 node --expose-gc --max-semi-space-size=512
//   --min-semi-space-size=512 --no-concurrent-recompilation --import ./bench/peers.mjs bench/app.mjs <variant> <redisUrl>
// Sampled (one sample per 512 bytes on average), so a few hundred bytes either way are noise. With --functions,
// then the variant's costliest functions of this module (dist/) by self bytes per request.
import { readFileSync } from 'node:fs';

const functions = process.argv.includes('--functions');
const [variantFile, noneFile, requests = '4000'] = process.argv.slice(2).filter((a) => a !== '--functions');

/** Self bytes of a profile by package: `dist (this module)`, `@scope/name`, `name` or a node: module. */
function byPackage(file) {
  const sums = new Map();
  const walk = (node) => {
    const url = node.callFrame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(dist|bench)\//, '$1/');
    const parts = url.split('/');
    const key = url.startsWith('dist/') ? 'dist (this module)' : parts.slice(0, url.startsWith('@') ? 2 : 1).join('/');
    sums.set(key || '(native or unknown)', (sums.get(key || '(native or unknown)') ?? 0) + node.selfSize);
    node.children.forEach(walk);
  };
  walk(JSON.parse(readFileSync(file, 'utf8')).head);
  return sums;
}

const variant = byPackage(variantFile);
const none = byPackage(noneFile);
const rows = [...new Set([...variant.keys(), ...none.keys()])]
  .map((key) => [key, ((variant.get(key) ?? 0) - (none.get(key) ?? 0)) / Number(requests)])
  .sort((a, b) => b[1] - a[1]);
for (const [key, bytes] of rows)
  if (Math.abs(bytes) >= 100) process.stdout.write(`${bytes.toFixed(0).padStart(8)}  ${key}\n`);
process.stdout.write(
  `${rows
    .reduce((sum, [, bytes]) => sum + bytes, 0)
    .toFixed(0)
    .padStart(8)}  in all\n`,
);

if (functions) {
  const own = new Map();
  const walk = (node) => {
    const { url, functionName, lineNumber } = node.callFrame;
    const file = url.replace(/^file:\/\/.*?\/dist\//, 'dist/');
    if (file.startsWith('dist/')) {
      const name = `${functionName || '(anonymous)'}  ${file}:${lineNumber + 1}`;
      own.set(name, (own.get(name) ?? 0) + node.selfSize);
    }
    node.children.forEach(walk);
  };
  walk(JSON.parse(readFileSync(variantFile, 'utf8')).head);
  process.stdout.write('\nthis module (dist/), by function:\n');
  for (const [name, bytes] of [...own].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
    process.stdout.write(`${(bytes / Number(requests)).toFixed(0).padStart(8)}  ${name}\n`);
  }
}
