import { REPLY } from '../protocol.js';
import { appendedAt } from './lean.lua.js';

const { allowed: ALLOWED, denied: DENIED } = REPLY;

/**
 * The lean steps of a fixed window and a GCRA (lean.lua.ts), with the numbers in locals. A fixed window counts
 * first (INCRBY, whose reply is the state before it plus the cost) and undoes it when the request is denied
 * (DECRBY, or DEL of the key it made): one command for an allowed request within its window, where reading and
 * writing take two; the script being atomic, nothing else ever sees a count a denial undid. Their decisions and
 * the states they leave are the twins' (period_step; the GCRA twin's step at the policy's limit, whose state is
 * the TAT alone). A GCRA counts first too (gcra_one: INCRBY of cost × T onto the TAT). fw_one and gcra_one
 * are lean_one's for their kernel in one function each: a Lua call costs Redis about what a GET does. Relies on the prelude, the codec, fixedWindowCounterLua and the GCRA core.
 */
export const leanKernelsLua = `
-- fixed window, counted first: INCRBY the cost (arg: its field as the call gave it, which Redis takes without
-- the float formatting of a Lua number), then read the state before it from the reply. Returns the
-- window's index, the count before, and what the key needs once allowed: nothing (FW_KEPT: INCRBY wrote it,
-- and its TTL already ends with its window), a SET (FW_NEW: it did not exist, FW_SET: another window or a
-- count past the integer layout); nil when INCRBY refused the value (another layout: nothing was written).
local FW_KEPT, FW_NEW, FW_SET = 1, 2, 3
-- INCRBY of arg; nil when the key holds another layout (nothing written) or when the sum left the integers a
-- double holds exactly (2^53: the reply would be rounded), which DECRBY, exact in Redis, takes back
local function fw_incrby(key, arg)
  local v = redis.pcall('INCRBY', key, arg)
  if type(v) ~= 'number' then return nil end
  if v >= 2 ^ 53 then
    redis.call('DECRBY', key, arg)
    return nil
  end
  return v
end
local function fw_lean_count(key, window, now, cost, arg)
  local v = fw_incrby(key, arg)
  if v == nil then return nil end
  local index = floor(now / window)
  if v == cost then return index, 0, FW_NEW end
  local old = v - cost
  local stored = floor(old / FW_SCALE)
  if stored < index then return index, 0, FW_SET end
  local count = old - stored * FW_SCALE
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
-- once allowed: the state the twin writes, where INCRBY alone did not
local function fw_lean_settle(key, index, count, how, cost, reset, slack)
  if how ~= FW_KEPT then
    redis.call('SET', key, fw_int_encode(index, count + cost), 'PX', max(max(reset, 0) + slack, 1))
  end
end
-- once denied (by this item or another): the key as it was
local function fw_lean_undo(key, how, arg)
  if how == FW_NEW then redis.call('DEL', key) else redis.call('DECRBY', key, arg) end
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
-- lean_one of a fixed window: fw_lean_count, fw_lean_decide and what follows in one function, as most
-- requests take it (a Lua call costs Redis about as much as a GET)
local function fw_one(key, p, cost, now, slack, out, arg)
  local v = fw_incrby(key, arg)
  if v == nil then return false end
  local window, limit = p.window, p.limit
  local index, count, how = floor(now / window), 0, FW_NEW
  if v ~= cost then
    local old = v - cost
    local stored = floor(old / FW_SCALE)
    how = FW_SET
    if stored >= index then
      index, count = stored, old - stored * FW_SCALE
      if count + cost < FW_SCALE then how = FW_KEPT end
    end
  end
  local reset, n, at = (index + 1) * window - now, count + cost, #out
  if cost <= limit and n <= limit then
    if how ~= FW_KEPT then redis.call('SET', key, fw_int_encode(index, n), 'PX', max(max(reset, 0) + slack, 1)) end
    ${appendedAt('at', `${ALLOWED}, limit - n, reset, 0`)}
    return true
  end
  fw_lean_undo(key, how, arg)
  ${appendedAt('at', 'fw_lean_decide(limit, window, index, count, now, cost)')}
  return true
end
-- lean_one of a GCRA, counted first as a fixed window is: INCRBY the cost's share of time (cost × T) onto the
-- TAT, whose reply is the TAT before it plus that. Allowed, the key holds the new TAT where it was ahead of now
-- (and is extended only when the TAT left its epoch: gcra_keep), else is SET to now plus the share; denied, the
-- share is taken back (DECRBY: a denied TAT was ahead of now, so the key existed). The decision and the TAT left
-- are the twin's: max(TAT, now) + cost × T, allowed when at most burst × T ahead (ceil_div written out). A cost
-- below 1 or above the burst, which writes nothing, reads the key instead.
local function gcra_one(key, p, cost, now, slack, out)
  local t, burst, at = p.t, p.burst, #out
  if cost < 1 or cost > burst then
    local lead = gcra_lean_read(redis.call('GET', key), now)
    if lead == nil then return false end
    ${appendedAt('at', 'gcra_lean_decide(p, lead, cost)')}
    return true
  end
  local share = cost * t
  local v = redis.pcall('INCRBY', key, fmt(share))
  if type(v) ~= 'number' then return false end
  local now_us, old = now * 1000, v - share
  local lead = old - now_us
  if lead < 0 then lead = 0 end
  if lead > (burst - cost) * t then
    redis.call('DECRBY', key, fmt(share))
    ${appendedAt('at', 'gcra_lean_decide(p, lead, cost)')}
    return true
  end
  local nxt = lead + share
  local units, reset = floor(nxt / t), floor(nxt / 1000)
  if units * t < nxt then units = units + 1 end
  if reset * 1000 < nxt then reset = reset + 1 end
  local tat = now_us + nxt
  if old <= now_us then
    redis.call('SET', key, fmt(tat), 'PX', max(gcra_keep(tat, now, p.window) + slack, 1))
  elseif floor(old / p.epoch) ~= floor(tat / p.epoch) then
    redis.call('PEXPIRE', key, max(gcra_keep(tat, now, p.window) + slack, 1))
  end
  ${appendedAt('at', `${ALLOWED}, burst - units, reset, 0`)}
  return true
end
`;
