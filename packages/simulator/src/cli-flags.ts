import { parseWindow } from '../../../lib/policy/window.js';
import { editDistance } from '../../../lib/util/unknown-fields.js';

/** A mistake in the command line: the flag at fault and what would be right. Exit code 2. */
export class UsageError extends Error {}

/**
 * The `--flag value` (or `--flag=value`) pairs of a command line, each of `flags` at most once; `--help` and
 * `-h` set `help`. An unknown flag names the nearest known one.
 * @example parseFlags(['--limit', '5'], ['limit', 'help']) // { limit: '5' }
 */
export function parseFlags<F extends string>(args: readonly string[], flags: readonly F[]): Partial<Record<F, string>> {
  const found: Partial<Record<string, string>> = {};
  const rest = [...args];
  for (let arg = rest.shift(); arg !== undefined; arg = rest.shift()) {
    if (arg === '-h') {
      found.help = 'true';
      continue;
    }
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument ${JSON.stringify(arg)}: flags start with --`);
    // split always returns at least one string
    const [name = '', inline] = arg.slice(2).split(/=(.*)/s, 2);
    if (!(flags as readonly string[]).includes(name)) {
      const near = flags.find((f) => editDistance(f, name) <= 2);
      throw new UsageError(`unknown flag --${name}${near === undefined ? '' : ` (did you mean --${near}?)`}`);
    }
    if (name === 'help') {
      found.help = 'true';
      continue;
    }
    const value = inline ?? rest.shift();
    if (value === undefined || (inline === undefined && value.startsWith('--'))) {
      throw new UsageError(`--${name} needs a value`);
    }
    if (found[name] !== undefined) throw new UsageError(`--${name} is given twice`);
    found[name] = value;
  }
  return found as Partial<Record<F, string>>;
}

/** The integer >= 1 a flag gives, or `fallback` when it is not given. */
export function integerFlag(flag: string, value: string | undefined, fallback?: number): number | undefined {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(`--${flag} must be an integer >= 1, got ${JSON.stringify(value)}`);
  }
  return n;
}

/** A duration flag as policies write windows: whole ms, or '500ms', '10s', '1m', '1h', '1d'. */
export function durationFlag(flag: string, value: string): number | string {
  const window = /^\d+$/.test(value) ? Number(value) : value;
  if (parseWindow(window) === undefined) {
    throw new UsageError(
      `--${flag} must be a whole number of ms >= 1 or a duration like '500ms', '10s', '1m', '1h', '1d', got ${JSON.stringify(value)}`,
    );
  }
  return window;
}
