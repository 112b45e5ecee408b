import { createHash } from 'node:crypto';

import { ALGORITHM_CODES, type AlgorithmKernel } from '../../algorithms/index.js';
import { concurrencyLua } from '../../algorithms/concurrency/concurrency.lua.js';
import {
  fixedWindowCounterLua,
  fixedWindowFromFirstRequestLua,
  fixedWindowLua,
} from '../../algorithms/fixed-window/fixed-window.lua.js';
import { periodCounterLua } from '../../algorithms/period-counter.js';
import { gcraCoreLua, gcraLua, gcraPerPlanLua } from '../../algorithms/gcra/gcra.lua.js';
import { quotaLua } from '../../algorithms/quota/quota.lua.js';
import { slidingWindowCounterLua } from '../../algorithms/sliding-window-counter/sliding-window-counter.lua.js';
import { slidingWindowLogLua } from '../../algorithms/sliding-window-log/sliding-window-log.lua.js';
import { tokenBucketLua } from '../../algorithms/token-bucket/token-bucket.lua.js';
import { NEVER_FITS } from '../protocol.js';
import { dispatcherCall, dispatcherSetup } from './dispatcher.lua.js';
import { leanKernelsLua } from './lean-kernels.lua.js';
import { leanLua } from './lean.lua.js';
import { requestsLua } from './requests.lua.js';
import { stateCodecLua } from './state-codec.lua.js';

/** Locals every Lua part below relies on. */
export const luaPrelude = `
local floor, min, max = math.floor, math.min, math.max
local NEVER = ${NEVER_FITS}
local function fmt(n) return string.format('%d', n) end
local function ceil_div(a, b)
  local q = floor(a / b)
  if q * b < a then q = q + 1 end
  return q
end
`;

/**
 * Wraps a twin, which defines the table `name`, in a function that builds it. A script runs from the top at
 * every call, and each function it defines is a new closure: the dispatcher builds only the twins a call
 * uses, not all of them.
 */
const maker = (name: string, twin: string): string => `local function make_${name}()\n${twin}\nreturn ${name}\nend`;

/** Each kernel's Lua twin, by the name of the table it defines. */
const TWINS: Readonly<Record<AlgorithmKernel, readonly [name: string, twin: string]>> = {
  'fixed-window': ['FW', fixedWindowLua],
  'sliding-window-log': ['SWL', slidingWindowLogLua],
  'sliding-window-counter': ['SWC', slidingWindowCounterLua],
  'token-bucket': ['TB', tokenBucketLua],
  gcra: ['GCRA', gcraLua],
  quota: ['QUOTA', quotaLua],
  concurrency: ['CONC', concurrencyLua],
  'fixed-window-first-request': ['FWF', fixedWindowFromFirstRequestLua],
  'gcra-per-plan': ['GCRAP', gcraPerPlanLua],
};

/** The makers of the twins, in the order of their codes: the dispatcher picks one by its item's code. */
function makers(): string[] {
  const byCode = (Object.keys(TWINS) as AlgorithmKernel[]).sort((a, b) => ALGORITHM_CODES[a] - ALGORITHM_CODES[b]);
  byCode.forEach((kernel, i) => {
    if (ALGORITHM_CODES[kernel] !== i + 1) throw new Error(`ALGORITHM_CODES must be 1..${byCode.length}`);
  });
  const names = byCode.map((kernel) => TWINS[kernel][0]);
  return [
    ...byCode.map((kernel) => maker(...TWINS[kernel])),
    `local MAKERS = { ${names.map((name) => `make_${name}`).join(', ')} }`,
  ];
}

/** Every algorithm's Lua twin, the makers that build them, and the dispatcher's table of built twins. */
const definitions = [
  luaPrelude,
  stateCodecLua,
  periodCounterLua,
  fixedWindowCounterLua,
  gcraCoreLua,
  leanKernelsLua,
  leanLua,
  ...makers(),
  dispatcherSetup,
  requestsLua,
].join('\n');

/** The one script of the Redis store: every algorithm's Lua twin and the multi-item dispatcher. */
export const RATE_LIMIT_SCRIPT = `${definitions}\n${dispatcherCall}`;

/** SHA1 of the script, computed here so that the caller's client needs no defineCommand. */
export const RATE_LIMIT_SCRIPT_SHA = createHash('sha1').update(RATE_LIMIT_SCRIPT).digest('hex');

/**
 * The function (Redis 7 `FCALL`) of the same code: its library builds the twins once, at the first call (the
 * standard libraries are not there while a library loads), and each call then runs only the dispatcher — a
 * script runs all its definitions again at every EVALSHA. Named after the script's hash, so that
 * applications on different versions of the module can share a Redis.
 */
export const RATE_LIMIT_FUNCTION = `nest_rate_limit_${RATE_LIMIT_SCRIPT_SHA.slice(0, 16)}`;

/** The library that registers RATE_LIMIT_FUNCTION (`FUNCTION LOAD REPLACE`). */
export const RATE_LIMIT_LIBRARY = [
  `#!lua name=${RATE_LIMIT_FUNCTION}`,
  'local function build()',
  definitions,
  'return function(KEYS, ARGV)',
  dispatcherCall,
  'end',
  'end',
  'local decide',
  `redis.register_function('${RATE_LIMIT_FUNCTION}', function(KEYS, ARGV)`,
  '  if not decide then decide = build() end',
  '  return decide(KEYS, ARGV)',
  'end)',
].join('\n');
