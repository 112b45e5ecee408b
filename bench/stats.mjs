// Small helpers of the newer benchmarks (alloc-probe, paired-cpu, redis-probe): medians, spreads, the
// machine's load, a child's JSON line, a results file written.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const median = (xs) => {
  const s = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** [min, max] of the numbers in `xs`, or null. */
export const spread = (xs) => {
  const s = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x));
  return s.length === 0 ? null : [Math.min(...s), Math.max(...s)];
};

/** The load averages over 1, 5 and 15 minutes (/proc/loadavg), or null where there is none. */
export const loadAverage = () => {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
  } catch {
    return null;
  }
};

export const fmt = (x, digits = 1) => (x === null || x === undefined || Number.isNaN(x) ? '—' : x.toFixed(digits));

/** Runs `node <args>` and resolves to the last line of its stdout, parsed as JSON; rejects on a failure. */
export function nodeJson(args, { cwd, env, timeoutMs = 300_000, what = args.at(-1) }) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`${what} exited with ${code}: ${stderr.slice(-1500)}`));
      try {
        resolve(JSON.parse(stdout.trim().split('\n').at(-1)));
      } catch (error) {
        reject(new Error(`${what} printed no JSON (${error.message}): ${stdout.slice(-500)} ${stderr.slice(-500)}`));
      }
    });
  });
}

/** Writes a results file and formats it with the repository's Prettier (as `npm run lint` checks it), if present. */
export function writeResults(file, text) {
  writeFileSync(file, text);
  const prettier = fileURLToPath(new URL('../node_modules/.bin/prettier', import.meta.url));
  if (existsSync(prettier)) spawnSync(prettier, ['--write', '--log-level', 'warn', file], { stdio: 'inherit' });
}
