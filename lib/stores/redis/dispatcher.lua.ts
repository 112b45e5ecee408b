/**
 * The dispatcher of the Redis store's script and function: the helpers it builds once (`dispatcherSetup`,
 * part of the definitions), and the part that runs at every call (`dispatcherCall`). It relies on the
 * prelude, the state codec and the table MAKERS of rate-limit.lua.ts.
 */
export const dispatcherSetup = `
-- KEYS[i]          state key of item i: <prefix>{<policy>:<identity>}
-- ARGV[1]          operation: 'consume' | 'check' (decides as consume would, writes nothing) | 'peek' |
--                  'refund' | 'reset' | 'batch' (several consumes, with ARGV of their own: requests.lua.ts)
-- ARGV[2]          current time in milliseconds since the epoch, or '' to read Redis TIME
-- ARGV[3]          milliseconds added to every key's TTL (tolerance for clocks of several app instances)
-- ARGV[4...]       then 5 fields per item (6 for a quota), in the order of KEYS:
--   algorithm      1 fixed window, 2 sliding log, 3 sliding counter, 4 token bucket, 5 gcra,
--                  6 quota (its window and capacity fields carry the period's start and end, in ms),
--                  7 concurrency;
--                  16 added for a policy with a block (its length follows the item's other fields);
--                  negated for a shadow item, which never denies the others and is written only when
--                  it is allowed itself
--   limit          units per window
--   window         milliseconds
--   capacity       burst for token bucket and gcra, else the limit
--   cost           units to consume, or to give back for 'refund'
--   next end       quotas only: the end of the period after the current one, in ms since the epoch
--   block          items whose code has 16 added only: the block after a denial, in ms
-- ARGV[1] 'block' and 'unblock' take the items as consume does, the block's length in ms as their cost.
-- Returns 4 integers per item: allowed (0/1, 2: denied and blocked), remaining, reset_ms, retry_ms (-1: the
-- cost can never fit).
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
-- A blocked key's value is "!<until ms>|<state as the twin stores it>" ('!' is neither a digit, '-' nor below
-- 32: no state starts with it). Returns the state and the end of its block (0: none).
local function decode(a, raw)
  if not raw then return false, 0 end
  if byte(raw, 1) == 33 then
    local untl, rest = string.match(raw, '^!(%-?%d+)|(.*)$')
    if not untl then return false, 0 end
    if rest == '' then return false, tonumber(untl) end
    return a.decode(rest), tonumber(untl)
  end
  return a.decode(raw), 0
end
-- Writes a state (deleting the key when nothing is counted), with its block while that lasts.
local function save(key, a, st, reset, slack, untl, now)
  local value = nil
  if st and reset > 0 then value = a.encode(st) end
  if untl and untl > now then
    redis.call('SET', key, '!' .. fmt(untl) .. '|' .. (value or ''), 'PX', fmt(max(reset, untl - now) + slack))
  elseif value then
    redis.call('SET', key, value, 'PX', fmt(reset + slack))
  else
    redis.call('DEL', key)
  end
end
-- The state of an item's key as the call found it, and its block (several items may share a key).
local function load(original, blocks, it)
  local st = original[it.key]
  if st == nil then
    local untl
    st, untl = decode(it.algo, redis.call('GET', it.key))
    original[it.key] = st
    blocks[it.key] = untl
  end
  return st, blocks[it.key]
end
local function peek(it, st, now)
  local _, _, remaining, reset = it.algo.step(st, it.limit, it.window, it.cap, now, 0, it.nxt)
  if remaining >= 1 then return { 1, remaining, reset, 0 } end
  local _, _, _, _, retry = it.algo.step(st, it.limit, it.window, it.cap, now, 1, it.nxt)
  return { 0, remaining, reset, retry }
end
-- allowed 2: denied because the key is blocked (by this denial or before it).
local function blocked(untl, now) return { 2, 0, untl - now, untl - now } end
local function blocking(block, remaining, reset, retry)
  if retry ~= NEVER then retry = max(retry, block) end
  return { 2, remaining, max(reset, block), retry }
end
local function emit(out, r)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = r[1], r[2], r[3], r[4]
end
-- An item's policy from its fields at ARGV[b + 1...]: algorithm code, limit, window, capacity, then (with_cost)
-- the cost, then a quota's next end and a block's length. Returns the policy, the cost (nil without) and the
-- index of the last field read.
local function policy_at(ARGV, b, with_cost)
  local code = tonumber(ARGV[b + 1])
  local shadow = code < 0
  if shadow then code = -code end
  local has_block = code > 16
  if has_block then code = code - 16 end
  local p = {
    algo = algorithm(code), limit = tonumber(ARGV[b + 2]), window = tonumber(ARGV[b + 3]),
    cap = tonumber(ARGV[b + 4]), shadow = shadow,
  }
  b = b + 4
  local cost = nil
  if with_cost then
    cost = tonumber(ARGV[b + 1])
    b = b + 1
  end
  if code == 6 then
    p.nxt = tonumber(ARGV[b + 1])
    b = b + 1
  end
  if has_block then
    p.block = tonumber(ARGV[b + 1])
    b = b + 1
  end
  return p, cost, b
end
-- The consume of one item (most requests), without the tables that several items need.
local function consume_one(key, p, cost, now, slack)
  local a = p.algo
  local old, untl = decode(a, redis.call('GET', key))
  if untl > now then return blocked(untl, now) end
  local st, allowed, remaining, reset, retry = a.step(old, p.limit, p.window, p.cap, now, cost, p.nxt)
  if allowed == 1 then
    if cost > 0 then save(key, a, st, reset, slack, 0, now) end
  elseif p.block and not p.shadow then
    save(key, a, old, reset, slack, now + p.block, now)
    return blocking(p.block, remaining, reset, retry)
  end
  return { allowed, remaining, reset, retry }
end
-- An item: its key, cost and policy's fields in one table (several items may share a policy).
local function item_of(key, p, cost)
  return {
    key = key, algo = p.algo, limit = p.limit, window = p.window, cap = p.cap, cost = cost, shadow = p.shadow,
    nxt = p.nxt, block = p.block,
  }
end
`;

/**
 * The per-call part of the dispatcher: reads KEYS and ARGV, decides, writes, returns. A consume of one item
 * (most requests) takes a path of its own (consume_one), without the tables that several items need: about
 * 2 µs of Redis CPU less per decision.
 */
export const dispatcherCall = `
local op = ARGV[1]
if op == 'batch' then return batch(KEYS, ARGV) end
if op == 'consume' and #KEYS == 1 then
  local p, cost = policy_at(ARGV, 3, true)
  return consume_one(KEYS[1], p, cost, clock(ARGV[2]), tonumber(ARGV[3]))
end
if op == 'reset' then
  for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end
  return {}
end
local items = {}
local b = 3
for i = 1, #KEYS do
  local p, cost
  p, cost, b = policy_at(ARGV, b, true)
  items[i] = item_of(KEYS[i], p, cost)
end
local out = {}
decide_items(op, items, clock(ARGV[2]), tonumber(ARGV[3]), out)
return out
`;
