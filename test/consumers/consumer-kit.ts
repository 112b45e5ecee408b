import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const HERE = fileURLToPath(new URL('.', import.meta.url));
export const INSTALL_MS = 300_000;

/** A temporary folder with the packed package in it; `dispose()` removes both. */
export interface Packed {
  readonly work: string;
  readonly tarball: string;
  dispose(): Promise<void>;
}

/** Packs the package as it stands (dist/ is built by `npm test`: packing must not build it again). */
export async function packPackage(): Promise<Packed> {
  const work = await mkdtemp(join(tmpdir(), 'nest-rate-limit-consumers-'));
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
    cwd: ROOT,
  });
  const tarball = join(work, (JSON.parse(stdout) as { filename: string }[])[0]?.filename ?? 'missing');
  return { work, tarball, dispose: () => rm(work, { recursive: true, force: true }) };
}

/** Packs the package before a spec file's tests and removes it after them; the function gives it, once packed. */
export function packedForThisFile(): () => Packed {
  let packed: Packed | undefined;
  beforeAll(async () => {
    packed = await packPackage();
  }, 60_000);
  afterAll(async () => {
    await packed?.dispose();
  });
  return () => {
    if (packed === undefined) throw new Error('the package is packed in beforeAll: use it in a hook or a test');
    return packed;
  };
}

/**
 * Installs the consumer `name` of test/consumers into `work`: its package.json and lock file (`npm ci`), the
 * folders of `sources` copied in (`[from, to]` under test/consumers and the consumer), then the packed package.
 * Not --legacy-peer-deps: an install that conflicts with the app's Nest fails here (ERESOLVE).
 */
export async function installConsumer(
  packed: Packed,
  name: string,
  sources: readonly (readonly [string, string])[],
): Promise<string> {
  const dir = join(packed.work, name);
  await mkdir(dir);
  await cp(join(HERE, name), dir, { recursive: true });
  for (const [from, to] of sources) await cp(join(HERE, from), join(dir, to), { recursive: true });
  const npm = (...args: string[]) =>
    run('npm', [...args, '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, timeout: INSTALL_MS });
  await npm('ci');
  await npm('install', '--no-save', packed.tarball);
  return dir;
}

/** A consumer's app, started: its process, and what it printed so far. */
export interface StartedApp {
  readonly app: ChildProcess;
  readonly output: () => string;
  /** The numbers of its `listening on <port> [<port>]` line. */
  readonly ports: readonly number[];
}

/** Starts `dist/main.js` of a consumer with `args` (and Node `flags`); resolves once it says it listens. */
export function startApp(
  dir: string,
  args: readonly string[] = [],
  flags: readonly string[] = [],
): Promise<StartedApp> {
  const app = spawn(process.execPath, [...flags, join('dist', 'main.js'), ...args], { cwd: dir, stdio: 'pipe' });
  let output = '';
  return new Promise((resolve, reject) => {
    const failed = (why: string) => reject(new Error(`${why}; the app printed:\n${output}`));
    app.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const ports = /listening on ([\d ]+)\n/.exec(output)?.[1];
      if (ports !== undefined) resolve({ app, output: () => output, ports: ports.trim().split(' ').map(Number) });
    });
    app.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    app.once('exit', (code) => failed(`the app exited with ${code}`));
  });
}

export type { ChildProcess };
