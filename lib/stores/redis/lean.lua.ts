import { ALGORITHM_CODES } from '../../algorithms/index.js';
import { REPLY, REPLY_WIDTH } from '../protocol.js';

const { allowed: ALLOWED } = REPLY;
const FW = ALGORITHM_CODES['fixed-window'];
const GCRA = ALGORITHM_CODES.gcra;
/** `out[n + 1], ... = a, r, reset, retry`: one item's reply appended. */
export const appendedAt = (n: string, values: string): string =>
  `${Array.from({ length: REPLY_WIDTH }, (_, i) => `out[${n} + ${i + 1}]`).join(', ')} = ${values}`;

/**
 * The lean consume: the most common shape of a request — enforced policies without a block, a lease or shadow
 * mode — decided without consume_one's and decide_items' tables (items, states, replies): a fixed window and a
 * GCRA of a static limit with the numbers in locals (lean-kernels.lua.ts), any other kernel with its twin's
 * step and codec. A value of a layout it does not read (a block; for a fixed window or a GCRA, a state of an
 * earlier version or a GCRA limit per plan) sends the request to the twins' path, with every key as it was.
 * Defined with the definitions, after leanKernelsLua.
 *
 * lean_kind(code, p): marks an enforced policy without a block (p from policy_at) as lean. lean_one(key, p,
 * cost, now, slack, out, arg) and lean_items(n, now, slack, out) (the items in LEAN_KEY, LEAN_P, LEAN_COST and
 * LEAN_ARG, the cost's field or nil; distinct keys: lean_request) append the replies and return true, or false
 * having written nothing. All-or-nothing as decide_items, and a denied request writes nothing.
 */
export const leanLua = `
local TWIN = 'twin'
local function lean_kind(code, p)
  p.lean = TWIN
  if code == ${FW} then p.lean = ${FW} end
  if code == ${GCRA} then
    p.lean = ${GCRA}
    p.t = gcra_emission(p.limit, p.window)
    p.burst = min(p.cap, floor(MAX_LEAD_US / p.t))
    p.epoch = gcra_epoch(p.window)
  end
end
-- an item's state (its key read), nil for a layout the lean path leaves to the twins' (for any other kernel: a
-- block)
local function lean_read(key, p, now, cost)
  local raw = redis.call('GET', key)
  if p.lean == ${FW} then return fw_lean_read(raw, p.window, now, cost) end
  if p.lean == ${GCRA} then return gcra_lean_read(raw, now) end
  if not raw then return false end
  if byte(raw, 1) == 33 then return nil end
  return p.algo.decode(raw)
end
-- allowed, remaining, reset_ms, retry_ms, and for any other kernel the new state (its twin's step)
local function lean_decide(p, a, b, now, cost)
  if p.lean == ${FW} then return fw_lean_decide(p.limit, p.window, a, b, now, cost) end
  if p.lean == ${GCRA} then return gcra_lean_decide(p, a, cost) end
  local new_st, allowed, remaining, reset, retry = p.algo.step(a, p.limit, p.window, p.cap, now, cost, p.nxt)
  return allowed, remaining, reset, retry, new_st
end
-- an allowed item's write (a denied one writes nothing)
local function lean_write(key, p, a, b, c, now, cost, reset, slack, arg, new_st)
  if cost <= 0 then return end
  if p.lean == ${FW} then
    fw_lean_write(key, a, b + cost, c, reset, slack, arg)
  elseif p.lean == ${GCRA} then
    local tat = now * 1000 + a + cost * p.t
    redis.call('SET', key, fmt(tat), 'PX', max(gcra_keep(tat, now, p.window) + slack, 1))
  elseif new_st then
    redis.call('SET', key, p.algo.encode(new_st), 'PX', max(max(reset, 0) + slack, 1))
  else
    redis.call('DEL', key)
  end
end
-- lean_one of any other kernel: its twin's step, without consume_one's block check and reply table
local function twin_one(key, p, cost, now, slack, out)
  local raw = redis.call('GET', key)
  local st = false
  if raw then
    if byte(raw, 1) == 33 then return false end
    st = p.algo.decode(raw)
  end
  local new_st, allowed, remaining, reset, retry = p.algo.step(st, p.limit, p.window, p.cap, now, cost, p.nxt)
  if allowed == ${ALLOWED} and cost > 0 then
    if new_st then
      redis.call('SET', key, p.algo.encode(new_st), 'PX', max(max(reset, 0) + slack, 1))
    else
      redis.call('DEL', key)
    end
  end
  local at = #out
  ${appendedAt('at', 'allowed, remaining, reset, retry')}
  return true
end
local function lean_one(key, p, cost, now, slack, out, arg)
  if p.lean == ${FW} then
    if cost < 1 or cost > p.limit then return false end
    return fw_one(key, p, cost, now, slack, out, arg or cost)
  end
  if p.lean == ${GCRA} then return gcra_one(key, p, cost, now, slack, out) end
  return twin_one(key, p, cost, now, slack, out)
end
local LEAN_KEY, LEAN_P, LEAN_COST, LEAN_ARG = {}, {}, {}, {}
local LA, LB, LC, LOK, LREM, LRESET, LRETRY, LNEW = {}, {}, {}, {}, {}, {}, {}, {}
-- all-or-nothing as decide_items: every item read and decided before anything is written, and written only
-- when every item is allowed (a denial writes nothing, not even to take back what an earlier item counted);
-- an allowed item of a denied request then replies as it stands (its step at cost 0 on the state found)
-- lean_items of fixed windows only (several clock-aligned limits of one request): fw_one's steps
local function fw_items(count, now, slack, out)
  local all = true
  for i = 1, count do
    local p, cost = LEAN_P[i], LEAN_COST[i]
    local index, counted, how = fw_lean_read(redis.call('GET', LEAN_KEY[i]), p.window, now, cost)
    if index == nil then return false end
    LA[i], LB[i], LC[i] = index, counted, how
    if cost > p.limit or counted + cost > p.limit then all = false end
  end
  local n = #out
  for i = 1, count do
    local p, cost, index, counted = LEAN_P[i], LEAN_COST[i], LA[i], LB[i]
    local limit, window = p.limit, p.window
    if all then
      local reset = (index + 1) * window - now
      fw_lean_write(LEAN_KEY[i], index, counted + cost, LC[i], reset, slack, LEAN_ARG[i])
      ${appendedAt('n', `${ALLOWED}, limit - counted - cost, reset, 0`)}
    else
      local allowed, remaining, reset, retry = fw_lean_decide(limit, window, index, counted, now, cost)
      if allowed == ${ALLOWED} then
        allowed, remaining, reset = fw_lean_decide(limit, window, index, counted, now, 0)
        retry = 0
      end
      ${appendedAt('n', 'allowed, remaining, reset, retry')}
    end
    n = n + ${REPLY_WIDTH}
  end
  return true
end
local function lean_items(count, now, slack, out)
  local fixed = true
  for i = 1, count do
    if LEAN_P[i].lean ~= ${FW} then fixed = false end
  end
  if fixed then return fw_items(count, now, slack, out) end
  local all = true
  for i = 1, count do
    local p, cost = LEAN_P[i], LEAN_COST[i]
    local a, b, c = lean_read(LEAN_KEY[i], p, now, cost)
    if a == nil then return false end
    LA[i], LB[i], LC[i] = a, b, c
    LOK[i], LREM[i], LRESET[i], LRETRY[i], LNEW[i] = lean_decide(p, a, b, now, cost)
    if LOK[i] ~= ${ALLOWED} then all = false end
  end
  local n = #out
  for i = 1, count do
    local p, cost = LEAN_P[i], LEAN_COST[i]
    if all then
      lean_write(LEAN_KEY[i], p, LA[i], LB[i], LC[i], now, cost, LRESET[i], slack, LEAN_ARG[i], LNEW[i])
    end
    if all or LOK[i] ~= ${ALLOWED} then
      ${appendedAt('n', 'LOK[i], LREM[i], LRESET[i], LRETRY[i]')}
    else
      local _, remaining, reset = lean_decide(p, LA[i], LB[i], now, 0)
      ${appendedAt('n', `${ALLOWED}, remaining, reset, 0`)}
    end
    n = n + ${REPLY_WIDTH}
  end
  return true
end
-- whether the request of LEAN_KEY, LEAN_P and LEAN_COST (costs without up-to) takes the lean path: not a fixed
-- window's cost of 0 (it writes nothing, where its write would make a key) nor one above its limit (never
-- fits), which the twins decide
local function lean_request(count)
  for i = 1, count do
    local p, cost = LEAN_P[i], LEAN_COST[i]
    local lean = p.lean
    if not lean or lean == ${FW} and (cost < 1 or cost > p.limit) then return false end
    for j = 1, i - 1 do
      if LEAN_KEY[j] == LEAN_KEY[i] then return false end
    end
  end
  return true
end
`;
