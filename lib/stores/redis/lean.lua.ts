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
 * rather than the twins' state and reply tables, a fixed window's count moved by INCRBY. Its decisions and the
 * states it writes are the twins' (period_step, the GCRA twin's step at the policy's limit); a value of a
 * layout it does not read (a block, a state of an earlier version, a GCRA limit per plan) sends the request to
 * the twins' path, before anything is written. Relies on the prelude, the codec, fixedWindowCounterLua and the
 * GCRA core; defined with the definitions.
 *
 * lean_kind(code, p): marks an enforced policy without a block (p from policy_at) as lean when its kernel has
 * a lean step. lean_one(key, p, cost, now, slack, out) and lean_items(n, now, slack, out) (the items in
 * LEAN_KEY, LEAN_P, LEAN_COST: distinct keys) append the replies and return true, or false having written
 * nothing.
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
-- fixed window: index, count and whether INCRBY writes the key (nil: another layout)
local function fw_lean_read(raw, window, now)
  local index = floor(now / window)
  if not raw then return index, 0, false end
  local stored, count = fw_int_decode(raw)
  if not stored then return nil end
  if stored < index then return index, 0, false end
  return stored, count, true
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
-- within the key's window its TTL already ends with the window: INCRBY moves the count alone
local function fw_lean_write(key, index, count, incr, cost, reset, slack)
  if incr and count + cost < FW_SCALE then
    redis.call('INCRBY', key, cost)
  else
    redis.call('SET', key, fw_int_encode(index, count + cost), 'PX', max(max(reset, 0) + slack, 1))
  end
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
local function lean_read(p, raw, now)
  if p.lean == ${FW} then return fw_lean_read(raw, p.window, now) end
  return gcra_lean_read(raw, now)
end
local function lean_decide(p, a, b, now, cost)
  if p.lean == ${FW} then return fw_lean_decide(p.limit, p.window, a, b, now, cost) end
  return gcra_lean_decide(p, a, cost)
end
local function lean_write(key, p, a, b, c, now, cost, reset, slack)
  if p.lean == ${FW} then return fw_lean_write(key, a, b, c, cost, reset, slack) end
  redis.call('SET', key, fmt(now * 1000 + a + cost * p.t), 'PX', max(reset + slack, 1))
end
local function lean_one(key, p, cost, now, slack, out)
  local a, b, c = lean_read(p, redis.call('GET', key), now)
  if a == nil then return false end
  local allowed, remaining, reset, retry = lean_decide(p, a, b, now, cost)
  if allowed == ${ALLOWED} and cost > 0 then lean_write(key, p, a, b, c, now, cost, reset, slack) end
  local n = #out
  ${appendedAt('n', 'allowed, remaining, reset, retry')}
  return true
end
local LEAN_KEY, LEAN_P, LEAN_COST = {}, {}, {}
local LA, LB, LC, LOK, LREM, LRESET, LRETRY = {}, {}, {}, {}, {}, {}, {}
-- all-or-nothing as decide_items: written only when every item is allowed; else an allowed item replies as it
-- stands (its step at cost 0 on the state found)
local function lean_items(count, now, slack, out)
  local all = true
  for i = 1, count do
    local p, cost = LEAN_P[i], LEAN_COST[i]
    local a, b, c = lean_read(p, redis.call('GET', LEAN_KEY[i]), now)
    if a == nil then return false end
    LA[i], LB[i], LC[i] = a, b, c
    LOK[i], LREM[i], LRESET[i], LRETRY[i] = lean_decide(p, a, b, now, cost)
    if LOK[i] ~= ${ALLOWED} then all = false end
  end
  local n = #out
  for i = 1, count do
    local p, cost = LEAN_P[i], LEAN_COST[i]
    if all then
      if cost > 0 then lean_write(LEAN_KEY[i], p, LA[i], LB[i], LC[i], now, cost, LRESET[i], slack) end
      ${appendedAt('n', 'LOK[i], LREM[i], LRESET[i], LRETRY[i]')}
    elseif LOK[i] == ${ALLOWED} then
      ${appendedAt('n', 'lean_decide(p, LA[i], LB[i], now, 0)')}
    else
      ${appendedAt('n', 'LOK[i], LREM[i], LRESET[i], LRETRY[i]')}
    end
    n = n + ${REPLY_WIDTH}
  end
  return true
end
-- whether the request of LEAN_KEY, LEAN_P and LEAN_COST (costs without up-to) takes the lean path
local function lean_request(count)
  for i = 1, count do
    if not LEAN_P[i].lean then return false end
    for j = 1, i - 1 do
      if LEAN_KEY[j] == LEAN_KEY[i] then return false end
    end
  end
  return true
end
`;
