import { createHash } from 'node:crypto';

import { NEVER_FITS } from '../engine.js';

import { fixedWindowLua } from '../../algorithms/fixed-window/fixed-window.lua.js';
import { periodCounterLua } from '../../algorithms/period-counter.js';
import { gcraLua } from '../../algorithms/gcra/gcra.lua.js';
import { quotaLua } from '../../algorithms/quota/quota.lua.js';
import { slidingWindowCounterLua } from '../../algorithms/sliding-window-counter/sliding-window-counter.lua.js';
import { slidingWindowLogLua } from '../../algorithms/sliding-window-log/sliding-window-log.lua.js';
import { tokenBucketLua } from '../../algorithms/token-bucket/token-bucket.lua.js';
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

const dispatcherSetup = `
-- KEYS[i]          state key of item i: <prefix>{<policy>:<identity>}
-- ARGV[1]          operation: 'consume' | 'check' (decides as consume would, writes nothing) | 'peek' |
--                  'refund' | 'reset'
-- ARGV[2]          current time in milliseconds since the epoch, or '' to read Redis TIME
-- ARGV[3]          milliseconds added to every key's TTL (tolerance for clocks of several app instances)
-- ARGV[4...]       then 5 fields per item (6 for a quota), in the order of KEYS:
--   algorithm      1 fixed window, 2 sliding log, 3 sliding counter, 4 token bucket, 5 gcra,
--                  6 quota (its window and capacity fields carry the period's start and end, in ms);
--                  negated for a shadow item, which never denies the others and is written only when
--                  it is allowed itself
--   limit          units per window
--   window         milliseconds
--   capacity       burst for token bucket and gcra, else the limit
--   cost           units to consume, or to give back for 'refund'
--   next end       quotas only: the end of the period after the current one, in ms since the epoch
-- Returns 4 integers per item: allowed (0/1), remaining, reset_ms, retry_ms (-1: the cost can never fit).
local built = {}
local function algorithm(code)
  local a = built[code]
  if not a then
    a = MAKERS[code]()
    built[code] = a
  end
  return a
end
local function clock(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end
local function decode(a, raw)
  if raw then return a.decode(raw) end
  return false
end
local function save(key, a, st, reset, slack)
  if st and reset > 0 then
    redis.call('SET', key, a.encode(st), 'PX', fmt(reset + slack))
  else
    redis.call('DEL', key)
  end
end
-- The state of an item's key as the call found it (several items may share a key).
local function load(original, it)
  local st = original[it.key]
  if st == nil then
    st = decode(it.algo, redis.call('GET', it.key))
    original[it.key] = st
  end
  return st
end
local function peek(it, st, now)
  local _, _, remaining, reset = it.algo.step(st, it.limit, it.window, it.cap, now, 0, it.nxt)
  if remaining >= 1 then return { 1, remaining, reset, 0 } end
  local _, _, _, _, retry = it.algo.step(st, it.limit, it.window, it.cap, now, 1, it.nxt)
  return { 0, remaining, reset, retry }
end
local function emit(out, r)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = r[1], r[2], r[3], r[4]
end
`;

/**
 * The per-call part of the dispatcher: reads KEYS and ARGV, decides, writes, returns. A consume of one item
 * (most requests) takes a path of its own, without the tables that several items need: about 2 µs of Redis
 * CPU less per decision.
 */
const decide = `
local op = ARGV[1]
if op == 'consume' and #KEYS == 1 then
  local code = tonumber(ARGV[4])
  if code < 0 then code = -code end
  local a, key, cost = algorithm(code), KEYS[1], tonumber(ARGV[8])
  local now = clock(ARGV[2])
  local nxt = nil
  if code == 6 then nxt = tonumber(ARGV[9]) end
  local st, allowed, remaining, reset, retry =
    a.step(decode(a, redis.call('GET', key)), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), now, cost, nxt)
  if allowed == 1 and cost > 0 then save(key, a, st, reset, tonumber(ARGV[3])) end
  return { allowed, remaining, reset, retry }
end
if op == 'reset' then
  for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end
  return {}
end
local now = clock(ARGV[2])
local slack = tonumber(ARGV[3])

local items = {}
local b = 3
for i = 1, #KEYS do
  local code = tonumber(ARGV[b + 1])
  local shadow = code < 0
  if shadow then code = -code end
  items[i] = {
    key = KEYS[i], algo = algorithm(code), limit = tonumber(ARGV[b + 2]),
    window = tonumber(ARGV[b + 3]), cap = tonumber(ARGV[b + 4]), cost = tonumber(ARGV[b + 5]), shadow = shadow,
  }
  b = b + 5
  if code == 6 then
    items[i].nxt = tonumber(ARGV[b + 1])
    b = b + 1
  end
end

local original = {}
local out = {}
if op == 'peek' then
  for i = 1, #items do emit(out, peek(items[i], load(original, items[i]), now)) end
  return out
end

if op == 'refund' then
  for i = 1, #items do
    local it = items[i]
    local st = it.algo.refund(load(original, it), it.limit, it.window, it.cap, now, it.cost)
    original[it.key] = st
    local r = peek(it, st, now)
    save(it.key, it.algo, st, r[3], slack)
    emit(out, r)
  end
  return out
end

-- consume: decide every item, write only when all enforced items are allowed (and then the allowed items
-- only: a shadow item that would deny consumes nothing); check: decide, report as a denied consume does (the
-- allowed items as they stand), write nothing
local working = {}
local results = {}
local all_allowed = true
for i = 1, #items do
  local it = items[i]
  local st = working[it.key]
  if st == nil then st = load(original, it) end
  local new_st, allowed, remaining, reset, retry = it.algo.step(st, it.limit, it.window, it.cap, now, it.cost, it.nxt)
  results[i] = { allowed, remaining, reset, retry, new_st or false }
  if allowed == 0 then
    if not it.shadow then all_allowed = false end
  elseif it.cost > 0 then
    working[it.key] = new_st or false
  end
end
if all_allowed and op == 'consume' then
  local last = {}
  for i = 1, #items do
    if items[i].cost > 0 and results[i][1] == 1 then last[items[i].key] = i end
  end
  for i = 1, #items do
    local it = items[i]
    if last[it.key] == i then save(it.key, it.algo, results[i][5], results[i][3], slack) end
    emit(out, results[i])
  end
  return out
end
for i = 1, #items do
  local it = items[i]
  if results[i][1] == 1 then
    local _, _, remaining, reset = it.algo.step(original[it.key], it.limit, it.window, it.cap, now, 0, it.nxt)
    emit(out, { 1, remaining, reset, 0 })
  else
    emit(out, results[i])
  end
end
return out
`;

/**
 * Wraps a twin, which defines the table `name`, in a function that builds it. A script runs from the top at
 * every call, and each function it defines is a new closure: the dispatcher builds only the twins a call
 * uses, not all of them.
 */
const maker = (name: string, twin: string): string => `local function make_${name}()\n${twin}\nreturn ${name}\nend`;

/** Every algorithm's Lua twin, the makers that build them, and the dispatcher's table of built twins. */
const definitions = [
  luaPrelude,
  stateCodecLua,
  periodCounterLua,
  maker('FW', fixedWindowLua),
  maker('SWL', slidingWindowLogLua),
  maker('SWC', slidingWindowCounterLua),
  maker('TB', tokenBucketLua),
  maker('GCRA', gcraLua),
  maker('QUOTA', quotaLua),
  // in the order of ALGORITHM_CODES
  'local MAKERS = { make_FW, make_SWL, make_SWC, make_TB, make_GCRA, make_QUOTA }',
  dispatcherSetup,
].join('\n');

/** The one script of the Redis store: every algorithm's Lua twin and the multi-item dispatcher. */
export const RATE_LIMIT_SCRIPT = `${definitions}\n${decide}`;

/** SHA1 of the script, computed here so that the caller's client needs no defineCommand. */
export const RATE_LIMIT_SCRIPT_SHA = createHash('sha1').update(RATE_LIMIT_SCRIPT).digest('hex');

/**
 * The function (Redis 7 `FCALL`) of the same code: its library builds the twins once, at the first call (the
 * standard libraries are not there while a library loads), and each call then runs only the dispatcher — a
 * script runs all its definitions again at every EVALSHA. Named after the script's hash, so that
 * applications on different versions of the module can share a Redis.
 */
export const RATE_LIMIT_FUNCTION = `nestjs_rate_limit_${RATE_LIMIT_SCRIPT_SHA.slice(0, 16)}`;

/** The library that registers RATE_LIMIT_FUNCTION (`FUNCTION LOAD REPLACE`). */
export const RATE_LIMIT_LIBRARY = [
  `#!lua name=${RATE_LIMIT_FUNCTION}`,
  'local function build()',
  definitions,
  'return function(KEYS, ARGV)',
  decide,
  'end',
  'end',
  'local decide',
  `redis.register_function('${RATE_LIMIT_FUNCTION}', function(KEYS, ARGV)`,
  '  if not decide then decide = build() end',
  '  return decide(KEYS, ARGV)',
  'end)',
].join('\n');
