import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Runs 4 processes that each send `perProcess` concurrent consumes of one key (`limit` per minute, or per
 * month for a quota; one fixed clock)
 * through the built package, released together, and returns how many were admitted in all.
 * `port` is a Redis port, or comma-separated Cluster ports.
 */
export async function consumeFromProcesses(
  port: string,
  algorithm: string,
  keyPrefix: string,
  { perProcess = 50, limit = 100 }: { perProcess?: number; limit?: number } = {},
): Promise<number> {
  const script = fileURLToPath(new URL('./consume-child.mjs', import.meta.url));
  const children = Array.from({ length: 4 }, () =>
    spawn(process.execPath, [script, port, algorithm, String(perProcess), keyPrefix, '1700000000000'], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, LIMIT: String(limit) },
    }),
  );
  const runs = children.map((child) => {
    const out: string[] = [];
    let ready: () => void = () => undefined;
    const isReady = new Promise<void>((resolve) => (ready = resolve));
    const done = new Promise<string[]>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out.push(...chunk.toString().trim().split('\n'));
        if (out[0] === 'ready') ready();
      });
      child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`child exited with ${code}`))));
    });
    return { isReady, done };
  });
  await Promise.all(runs.map((r) => r.isReady));
  children.forEach((child) => child.stdin.end('go\n'));
  const admitted = (await Promise.all(runs.map((r) => r.done))).map((out) => Number(out[1]));
  return admitted.reduce((a, b) => a + b, 0);
}
