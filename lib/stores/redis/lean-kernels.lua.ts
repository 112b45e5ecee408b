import { REPLY } from '../protocol.js';
import { appendedAt } from './lean.lua.js';

const { allowed: ALLOWED, denied: DENIED } = REPLY;

/**
 * The lean steps of a fixed window and a GCRA (lean.lua.ts), with the numbers in locals. Each reads its key
 * (GET), decides, and writes only when the request is allowed: a denial sends no write command, so a flood of
 * denials costs replicas, the AOF and RDB's save points nothing. An allowed fixed window within its window, or a
 * GCRA whose TAT is ahead of now, then moves its key by INCRBY (its TTL already outlives what it holds); a new
 * key, one of another window or a TAT behind now is SET.
 *
 * Why read first: they once counted first (INCRBY, whose reply is the state before it plus the cost) and took a
 * denial back (DECRBY): one command for the commonest allowed request, but two writes per denial. No command
 * writes only when the sum fits (BITFIELD OVERFLOW FAIL is a write command, and does not fit these layouts), so
 * a denial that writes nothing needs the state read first. What it costs, per decision (the outer FCALL's time
 * in INFO commandstats, 5,000 requests over 5,000 keys, 50 in flight, medians of 9 interleaved rounds on a busy
 * 2-core machine; then redis-server's instructions under callgrind, all of them, I/O included), before → after:
 *   fixed window, allowed within its window   2.84 → 3.60 µs   19.9k → 27.4k   INCRBY → GET + INCRBY
 *   fixed window, allowed, new key            6.67 → 6.16 µs   38.3k → 35.1k   INCRBY + SET → GET + SET
 *   fixed window, denied                      3.00 → 2.49 µs   26.2k → 21.6k   INCRBY + DECRBY → GET
 *   GCRA, allowed, TAT ahead                  3.45 → 3.45 µs   22.3k → 31.4k   INCRBY → GET + INCRBY
 *   GCRA, allowed, new key                    7.81 → 6.23 µs   43.9k → 40.7k   INCRBY + SET → GET + SET
 *   GCRA, denied                              3.83 → 2.84 µs   34.2k → 24.9k   INCRBY + DECRBY → GET
 *   3 fixed windows, allowed                  8.62 → 10.06 µs  62.6k → 86.0k
 *   3 fixed windows, the last denies          10.38 → 9.52 µs  88.9k → 72.1k
 * An allowed request whose key it moves by INCRBY pays a GET (+0.4-0.8 µs, about 7k instructions); every other
 * decision costs less than it did. Their decisions and the states they leave are the twins' (period_step; the
 * GCRA twin's step at the policy's limit, whose state is the TAT alone). fw_one and gcra_one are lean_one's for
 * their kernel in one function each: a Lua call costs Redis about what a GET does. Relies on the prelude, the
 * codec, fixedWindowCounterLua and the GCRA core.
 */
export const leanKernelsLua = `
-- fixed window: how an allowed request writes its key, told by the state it read: FW_KEPT, INCRBY of the cost
-- (the key holds this window's count in the integer layout, and its TTL already ends with the window);
-- FW_SET, a SET of the new state (no key, another window, or a count that leaves the integer layout)
local FW_KEPT, FW_SET = 1, 2
-- the state in raw (GET's reply) before a request of cost: the window's index (the newest the key has seen),
-- the count in it and how an allowed request writes; nil for a value of another layout (or past the integers
-- a double holds exactly), which the twins' path reads
local function fw_lean_read(raw, window, now, cost)
  local index = floor(now / window)
  if not raw then return index, 0, FW_SET end
  local first = byte(raw, 1)
  if first == nil or first < 48 or first > 57 then return nil end
  local v = tonumber(raw)
  if not v or v >= 2 ^ 53 then return nil end
  local stored = floor(v / FW_SCALE)
  if stored < index then return index, 0, FW_SET end
  local count = v - stored * FW_SCALE
  if count + cost >= FW_SCALE then return stored, count, FW_SET end
  return stored, count, FW_KEPT
end
local function fw_lean_decide(limit, window, index, count, now, cost)
  local reset = (index + 1) * window - now
  if cost > limit then
    if count == 0 then reset = 0 end
    return ${DENIED}, max(0, limit - count), reset, NEVER
  end
  local n = count + cost
  if n > limit then return ${DENIED}, max(0, limit - count), reset, reset end
  if n == 0 then return ${ALLOWED}, limit, 0, 0 end
  return ${ALLOWED}, limit - n, reset, 0
end
-- an allowed request's write: INCRBY of its cost field (arg, which Redis reads without a Lua number's
-- formatting) where the key is kept, else (or where Redis does not take the value read as an integer) a SET
local function fw_lean_write(key, index, n, how, reset, slack, arg)
  if how == FW_KEPT and type(redis.pcall('INCRBY', key, arg)) == 'number' then return end
  redis.call('SET', key, fw_int_encode(index, n), 'PX', max(max(reset, 0) + slack, 1))
end
-- GCRA: the TAT's lead over now in µs (nil: another layout than the TAT alone)
local function gcra_lean_read(raw, now)
  if not raw then return 0 end
  local first = byte(raw, 1)
  if first == nil or first < 48 or first > 57 then return nil end
  local tat = tonumber(raw)
  if not tat then return nil end
  return max(0, tat - now * 1000)
end
local function gcra_lean_decide(p, lead, cost)
  local t, burst = p.t, p.burst
  local remaining, reset = max(0, burst - ceil_div(lead, t)), ceil_div(lead, 1000)
  if cost > burst then return ${DENIED}, remaining, reset, NEVER end
  local room = (burst - cost) * t
  if lead > room then return ${DENIED}, remaining, reset, ceil_div(lead - room, 1000) end
  if cost == 0 then return ${ALLOWED}, remaining, reset, 0 end
  local nxt = lead + cost * t
  return ${ALLOWED}, burst - ceil_div(nxt, t), ceil_div(nxt, 1000), 0
end
-- lean_one of a fixed window: fw_lean_read, fw_lean_decide and fw_lean_write in one function, as most
-- requests take it (a Lua call costs Redis about as much as a GET)
local function fw_one(key, p, cost, now, slack, out, arg)
  local raw = redis.call('GET', key)
  local window, limit = p.window, p.limit
  local index, count, how = floor(now / window), 0, FW_SET
  if raw then
    local first = byte(raw, 1)
    if first == nil or first < 48 or first > 57 then return false end
    local v = tonumber(raw)
    if not v or v >= 2 ^ 53 then return false end
    local stored = floor(v / FW_SCALE)
    if stored >= index then
      index, count = stored, v - stored * FW_SCALE
      if count + cost < FW_SCALE then how = FW_KEPT end
    end
  end
  local reset, n, at = (index + 1) * window - now, count + cost, #out
  if cost > limit or n > limit then
    ${appendedAt('at', 'fw_lean_decide(limit, window, index, count, now, cost)')}
    return true
  end
  if how ~= FW_KEPT or type(redis.pcall('INCRBY', key, arg)) ~= 'number' then
    redis.call('SET', key, fw_int_encode(index, n), 'PX', max(max(reset, 0) + slack, 1))
  end
  ${appendedAt('at', `${ALLOWED}, limit - n, reset, 0`)}
  return true
end
-- lean_one of a GCRA: the TAT read, then, allowed, moved by INCRBY of the cost's share of time (cost × T)
-- where it is ahead of now (the key extended only when the TAT leaves its epoch: gcra_keep), else SET to now
-- plus the share. The decision and the TAT left are the twin's: max(TAT, now) + cost × T, allowed when at most
-- burst × T ahead (ceil_div written out). A cost below 1 or above the burst writes nothing.
local function gcra_one(key, p, cost, now, slack, out)
  local lead = gcra_lean_read(redis.call('GET', key), now)
  if lead == nil then return false end
  local t, burst, at = p.t, p.burst, #out
  if cost < 1 or lead > (burst - cost) * t then
    ${appendedAt('at', 'gcra_lean_decide(p, lead, cost)')}
    return true
  end
  local share, now_us = cost * t, now * 1000
  local nxt = lead + share
  local units, reset = floor(nxt / t), floor(nxt / 1000)
  if units * t < nxt then units = units + 1 end
  if reset * 1000 < nxt then reset = reset + 1 end
  local tat = now_us + nxt
  if lead == 0 then
    redis.call('SET', key, fmt(tat), 'PX', max(gcra_keep(tat, now, p.window) + slack, 1))
  else
    -- refused: not an integer as Redis writes one (the twin reads it otherwise); nothing was written
    if type(redis.pcall('INCRBY', key, fmt(share))) ~= 'number' then return false end
    if floor((now_us + lead) / p.epoch) ~= floor(tat / p.epoch) then
      redis.call('PEXPIRE', key, max(gcra_keep(tat, now, p.window) + slack, 1))
    end
  end
  ${appendedAt('at', `${ALLOWED}, burst - units, reset, 0`)}
  return true
end
`;
