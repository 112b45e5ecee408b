import { MAX_CHARGED_UNITS } from '../../algorithms/algorithm.js';
import { FIXED_WINDOW_COUNT_BITS } from '../../algorithms/fixed-window/fixed-window.js';
import { GCRA_EXPIRY_EPOCH_MS } from '../../algorithms/gcra/gcra.js';
import { ALGORITHM_CODES } from '../../algorithms/index.js';
import { MAX_TAKEN } from '../../algorithms/token-bucket/token-bucket.js';
import { MAX_LEAD_US } from '../../policy/emission.js';
import { DEBT_CAP_CAPACITIES } from '../../policy/max-wait.js';
import {
  BATCH_RUN,
  BLOCK_FLAG,
  NEVER_FITS,
  POLICY_FIELD,
  POLICY_FIELDS,
  REPLY,
  REPLY_WIDTH,
  UP_TO_SEPARATOR,
} from '../protocol.js';

/**
 * The constants the Lua program (the .lua files of lib/) shares with TypeScript, by the names the Lua uses:
 * defined here once, and given to the Lua as a block of locals ahead of its files (luaConstants()). The
 * assembler (etc/lua/assemble.mjs) reads the names of this object (a plain literal, one property a name) to
 * check the files' requires. LEAN_PATH is not shared: the program's lean path, on (off only in a program the
 * conformance suite assembles, luaProgram({ lean: false })).
 */
export const LUA_CONSTANTS = {
  NEVER_FITS,
  ALLOWED: REPLY.allowed,
  DENIED: REPLY.denied,
  BLOCKED: REPLY.blocked,
  REPLY_WIDTH,
  BLOCK_FLAG,
  BATCH_RUN,
  POLICY_FIELDS,
  FIELD_CODE: POLICY_FIELD.code,
  FIELD_LIMIT: POLICY_FIELD.limit,
  FIELD_WINDOW: POLICY_FIELD.window,
  FIELD_CAPACITY: POLICY_FIELD.capacity,
  UP_TO_PATTERN: `^(%d+)${UP_TO_SEPARATOR}(%d+)$`,
  CODE_FIXED_WINDOW: ALGORITHM_CODES['fixed-window'],
  CODE_SLIDING_WINDOW_LOG: ALGORITHM_CODES['sliding-window-log'],
  CODE_SLIDING_WINDOW_COUNTER: ALGORITHM_CODES['sliding-window-counter'],
  CODE_TOKEN_BUCKET: ALGORITHM_CODES['token-bucket'],
  CODE_GCRA: ALGORITHM_CODES.gcra,
  CODE_QUOTA: ALGORITHM_CODES.quota,
  CODE_CONCURRENCY: ALGORITHM_CODES.concurrency,
  CODE_FIXED_WINDOW_FIRST_REQUEST: ALGORITHM_CODES['fixed-window-first-request'],
  CODE_GCRA_PER_PLAN: ALGORITHM_CODES['gcra-per-plan'],
  MAX_CHARGED_UNITS,
  MAX_TAKEN,
  MAX_LEAD_US,
  DEBT_CAP_CAPACITIES,
  FIXED_WINDOW_COUNT_BITS,
  GCRA_EXPIRY_EPOCH_MS,
  LEAN_PATH: true as boolean,
};

/** A value of LUA_CONSTANTS as Lua writes it. */
function luaLiteral(value: number | string | boolean): string {
  if (typeof value === 'string') return `'${value.replace(/[\\']/g, '\\$&')}'`;
  if (typeof value === 'number' && !Number.isSafeInteger(value)) {
    throw new Error(`nest-rate-limit: a Lua constant must be an integer, got ${value}`);
  }
  return String(value);
}

/** The block of locals that defines LUA_CONSTANTS (with `overrides`) for the Lua program. */
export function luaConstants(overrides: Partial<typeof LUA_CONSTANTS> = {}): string {
  return Object.entries({ ...LUA_CONSTANTS, ...overrides })
    .map(([name, value]) => `local ${name} = ${luaLiteral(value)}`)
    .join('\n');
}
