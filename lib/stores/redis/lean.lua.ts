import { ALGORITHM_CODES } from '../../algorithms/index.js';
import { REPLY, REPLY_WIDTH } from '../protocol.js';

const { allowed: ALLOWED, denied: DENIED } = REPLY;
const FW = ALGORITHM_CODES['fixed-window'];
const GCRA = ALGORITHM_CODES.gcra;
/** `out[n + 1], ... = a, r, reset, retry`: one item's reply appended. */
const appendedAt = (n: string, values: string): string =>
  `${Array.from({ length: REPLY_WIDTH }, (_, i) => `out[${n} + ${i + 1}]`).join(', ')} = ${values}`;

/**
 * The lean consume: the most common shape of a request — enforced policies of a clock-aligned fixed window or a
 * GCRA with a static limit, no block, lease or shadow — decided with the numbers in locals and reused arrays
 * rather than the twins' state and reply tables. A fixed window counts first (INCRBY, whose reply is the state
 * before it plus the cost) and undoes it when the request is denied (DECRBY, or DEL of the key it made): one
 * command for an allowed request in its window, where reading and writing take two, and, the script being
 * atomic, nothing else ever sees the count a denial undid. Its decisions and the states it leaves are the
 * twins' (period_step, the GCRA twin's step at the policy's limit); a value of a layout it does not read (a
 * block, a state of an earlier version, a GCRA limit per plan) sends the request to the twins' path, with
 * nothing written. Relies on the prelude, the codec, fixedWindowCounterLua and the GCRA core; defined with the
 * definitions.
 *
 * lean_kind(code, p): marks an enforced policy without a block (p from policy_at) as lean when its kernel has
 * a lean step. lean_one(key, p, cost, now, slack, out, arg) and lean_items(n, now, slack, out) (the items in
 * LEAN_KEY, LEAN_P, LEAN_COST, LEAN_ARG: distinct keys, lean_request; arg: the cost's field, or nil) append the replies and return true, or false
 * having left every key as it was.
 */
export const leanLua = `
local function lean_kind(code, p)
  if code == ${FW} then p.lean = ${FW} end
  if code == ${GCRA} then
    p.lean = ${GCRA}
    p.t = gcra_emission(p.limit, p.window)
    p.burst = min(p.cap, floor(MAX_LEAD_US / p.t))
  end
end
-- fixed window, counted first: INCRBY the cost (arg: its field as the call gave it, which Redis takes without
-- the float formatting of a Lua number), then read the state before it from the reply. Returns the
-- window's index, the count before, and what the key needs once allowed: nothing (FW_KEPT: INCRBY wrote it,
-- and its TTL already ends with its window), a SET (FW_NEW: it did not exist, FW_SET: another window or a
-- count past the integer layout); nil when INCRBY refused the value (another layout: nothing was written).
local FW_KEPT, FW_NEW, FW_SET = 1, 2, 3
local function fw_lean_count(key, window, now, cost, arg)
  local v = redis.pcall('INCRBY', key, arg)
  if type(v) ~= 'number' then return nil end
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
-- an item's state (a GCRA reads its key, a fixed window counts first: fw_lean_count), nil for another layout
local function lean_read(key, p, now, cost, arg)
  if p.lean == ${FW} then return fw_lean_count(key, p.window, now, cost, arg) end
  return gcra_lean_read(redis.call('GET', key), now)
end
local function lean_decide(p, a, b, now, cost)
  if p.lean == ${FW} then return fw_lean_decide(p.limit, p.window, a, b, now, cost) end
  return gcra_lean_decide(p, a, cost)
end
-- an allowed item's write (a GCRA's TAT; what a fixed window's INCRBY left to do), or a denied one's undoing
local function lean_write(key, p, a, b, c, now, cost, reset, slack, allowed, arg)
  if p.lean == ${FW} then
    if allowed then return fw_lean_settle(key, a, b, c, cost, reset, slack) end
    return fw_lean_undo(key, c, arg)
  end
  if allowed and cost > 0 then redis.call('SET', key, fmt(now * 1000 + a + cost * p.t), 'PX', max(reset + slack, 1)) end
end
-- lean_one of a fixed window: fw_lean_count, fw_lean_decide and what follows in one function, as most
-- requests take it (a Lua call costs Redis about as much as a GET)
local function fw_one(key, p, cost, now, slack, out, arg)
  local v = redis.pcall('INCRBY', key, arg)
  if type(v) ~= 'number' then return false end
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
local function lean_one(key, p, cost, now, slack, out, arg)
  if p.lean == ${FW} then
    if cost < 1 then return false end
    return fw_one(key, p, cost, now, slack, out, arg or cost)
  end
  arg = arg or cost
  local a, b, c = lean_read(key, p, now, cost, arg)
  if a == nil then return false end
  local allowed, remaining, reset, retry = lean_decide(p, a, b, now, cost)
  lean_write(key, p, a, b, c, now, cost, reset, slack, allowed == ${ALLOWED}, arg)
  local n = #out
  ${appendedAt('n', 'allowed, remaining, reset, retry')}
  return true
end
local LEAN_KEY, LEAN_P, LEAN_COST, LEAN_ARG = {}, {}, {}, {}
local LA, LB, LC, LOK, LREM, LRESET, LRETRY = {}, {}, {}, {}, {}, {}, {}
-- all-or-nothing as decide_items: kept only when every item is allowed (a fixed window's count undone
-- otherwise); an allowed item then replies as it stands (its step at cost 0 on the state found)
local function lean_items(count, now, slack, out)
  local all = true
  for i = 1, count do
    local p, cost = LEAN_P[i], LEAN_COST[i]
    local a, b, c = lean_read(LEAN_KEY[i], p, now, cost, LEAN_ARG[i])
    if a == nil then
      for j = 1, i - 1 do
        lean_write(LEAN_KEY[j], LEAN_P[j], LA[j], LB[j], LC[j], now, LEAN_COST[j], 0, slack, false, LEAN_ARG[j])
      end
      return false
    end
    LA[i], LB[i], LC[i] = a, b, c
    LOK[i], LREM[i], LRESET[i], LRETRY[i] = lean_decide(p, a, b, now, cost)
    if LOK[i] ~= ${ALLOWED} then all = false end
  end
  local n = #out
  for i = 1, count do
    local p, cost = LEAN_P[i], LEAN_COST[i]
    lean_write(LEAN_KEY[i], p, LA[i], LB[i], LC[i], now, cost, LRESET[i], slack, all, LEAN_ARG[i])
    if all or LOK[i] ~= ${ALLOWED} then
      ${appendedAt('n', 'LOK[i], LREM[i], LRESET[i], LRETRY[i]')}
    else
      ${appendedAt('n', 'lean_decide(p, LA[i], LB[i], now, 0)')}
    end
    n = n + ${REPLY_WIDTH}
  end
  return true
end
-- whether the request of LEAN_KEY, LEAN_P and LEAN_COST (costs without up-to) takes the lean path: a fixed
-- window's cost of 0 counts nothing (its INCRBY would make a key)
local function lean_request(count)
  for i = 1, count do
    if not LEAN_P[i].lean or LEAN_COST[i] < 1 and LEAN_P[i].lean == ${FW} then return false end
    for j = 1, i - 1 do
      if LEAN_KEY[j] == LEAN_KEY[i] then return false end
    end
  end
  return true
end
`;
