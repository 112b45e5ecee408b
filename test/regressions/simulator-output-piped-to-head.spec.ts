import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Regression: the simulator's command line piped into a reader that closes early (`npm run simulate -- … | head
// -1`) ended in an unhandled EPIPE: a stack trace on stderr and exit code 1, from the first write after the
// reader had gone. It now stops quietly, with exit code 0: the rest of its output has nowhere to go.

const CLI = join(process.cwd(), 'packages', 'simulator', 'bin', 'simulate.mjs');

interface Ended {
  readonly firstLine: string;
  readonly stderr: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Runs the CLI with its stdout read up to the first line, then closed (as `| head -1` does). */
function firstLineOf(args: readonly string[]): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('\n')) child.stdout.destroy();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ firstLine: out.split('\n')[0] ?? '', stderr, code, signal }));
  });
}

describe('the simulator piped into a reader that closes after the first line (regression: unhandled EPIPE)', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'piped-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    // several runs, each table written once its run is done: the reader is gone by the second
    [
      'simulate-fleet',
      ['--instances', '4', '--rate', '20000', '--limit', '8000', '--algorithm', 'all'],
      /^fixed-window/,
    ],
    ['simulate', ['--algorithm', 'all'], /^fixed-window: admitted/],
    ['--help', [], /^Usage/],
  ] as const)('%s: exits 0 without a stack trace', async (command, flags, first) => {
    const args = command === '--help' ? [command] : [command, ...flags, '--out', join(dir, `${command}.svg`)];
    const ended = await firstLineOf(args);
    expect(ended.firstLine).toMatch(first);
    expect(ended.stderr).not.toMatch(/EPIPE|Error|\n\s+at /);
    expect(ended.signal).toBeNull();
    expect(ended.code).toBe(0);
  });
});
