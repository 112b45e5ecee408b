-- requires: floor, min, max, fmt, byte, lean_kind, make_FW, make_SWL, make_SWC, make_TB, make_GCRA, make_QUOTA,
--   make_CONC, make_FWF, make_GCRAP, ALLOWED, DENIED, BLOCKED, NEVER_FITS, BLOCK_FLAG, FIELD_CODE, FIELD_LIMIT,
--   FIELD_WINDOW, FIELD_CAPACITY, POLICY_FIELDS, UP_TO_PATTERN, CODE_FIXED_WINDOW, CODE_SLIDING_WINDOW_LOG,
--   CODE_SLIDING_WINDOW_COUNTER, CODE_TOKEN_BUCKET, CODE_GCRA, CODE_QUOTA, CODE_CONCURRENCY,
--   CODE_FIXED_WINDOW_FIRST_REQUEST, CODE_GCRA_PER_PLAN, LEAN_PATH
-- provides: clock, load, save, peek, blocked, emit, cost_of, policy_at, decide_one, consume_one, item_of
-- The dispatcher of the Redis store's script and function: the helpers it builds once (part of the
-- definitions); call.lua is the part that runs at every call. The twins (one maker each, by algorithm code)
-- are built when a call first uses them: a script runs from the top at every call, and each function it
-- defines is a new closure, so the dispatcher builds only the twins a call uses, not all of them.
-- KEYS[i]          state key of item i: <prefix>{<policy>:<identity>}
-- ARGV[1]          operation: 'consume' | 'check' (decides as consume would, writes nothing) | 'peek' |
--                  'refund' | 'charge' (takes the costs without deciding, past the limit) | 'reset' |
--                  'batch' (several consumes, with ARGV of their own: requests.lua)
-- ARGV[2]          current time in milliseconds since the epoch, or '' to read Redis TIME
-- ARGV[3]          milliseconds added to every key's TTL (tolerance for clocks of several app instances)
-- ARGV[4...]       then the fields of each item (POLICY_FIELD in protocol.ts), in the order of KEYS:
--   algorithm      its code (ALGORITHM_CODES: CODE_FIXED_WINDOW, ...)
--                  (a quota's window and capacity fields carry the period's start and end, in ms);
--                  BLOCK_FLAG added for a policy with a block (its length follows the item's other fields);
--                  negated for a shadow item, which never denies the others and is written only when
--                  it is allowed itself (a charge takes nothing of it)
--   limit          units per window
--   window         milliseconds
--   capacity       burst for token bucket and gcra, else the limit
--   cost           units to consume, to give back for 'refund', to take for 'charge'; for a lease
--                  '<cost><UP_TO_SEPARATOR><up to>': at least the cost and, when more fits, up to that many units
--   next end       quotas only: the end of the period after the current one, in ms since the epoch
--   block          items whose code has BLOCK_FLAG added only: the block after a denial, in ms
-- ARGV[1] 'block' and 'unblock' take the items as consume does, the block's length in ms as their cost.
-- Returns REPLY_WIDTH integers per item: allowed (DENIED/ALLOWED, BLOCKED: denied and blocked), remaining,
-- reset_ms, retry_ms (NEVER_FITS: the cost can never fit; for an allowed lease, the units it took).
local MAKERS = {
  [CODE_FIXED_WINDOW] = make_FW,
  [CODE_SLIDING_WINDOW_LOG] = make_SWL,
  [CODE_SLIDING_WINDOW_COUNTER] = make_SWC,
  [CODE_TOKEN_BUCKET] = make_TB,
  [CODE_GCRA] = make_GCRA,
  [CODE_QUOTA] = make_QUOTA,
  [CODE_CONCURRENCY] = make_CONC,
  [CODE_FIXED_WINDOW_FIRST_REQUEST] = make_FWF,
  [CODE_GCRA_PER_PLAN] = make_GCRAP,
}
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
-- Writes a state (deleting the key when nothing is counted), with its block while that lasts. A state whose
-- reset has passed on this clock is kept for the slack: a clock behind may still count it.
local function save(key, a, st, reset, slack, untl, now, window)
  local value = nil
  if st then value = a.encode(st) end
  if untl and untl > now then
    redis.call('SET', key, '!' .. fmt(untl) .. '|' .. (value or ''), 'PX', fmt(max(reset, untl - now) + slack))
  elseif value then
    if a.keep then reset = a.keep(st, reset, now, window) end
    redis.call('SET', key, value, 'PX', fmt(max(max(reset, 0) + slack, 1)))
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
  if remaining >= 1 then return { ALLOWED, remaining, reset, 0 } end
  local _, _, _, _, retry = it.algo.step(st, it.limit, it.window, it.cap, now, 1, it.nxt)
  return { DENIED, remaining, reset, retry }
end
-- allowed BLOCKED: denied because the key is blocked (by this denial or before it).
local function blocked(untl, now) return { BLOCKED, 0, untl - now, untl - now } end
local function blocking(block, remaining, reset, retry)
  if retry ~= NEVER_FITS then retry = max(retry, block) end
  return { BLOCKED, remaining, max(reset, block), retry }
end
local function emit(out, r)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = r[1], r[2], r[3], r[4]
end
-- An item's cost field: its cost, and the most it takes (a lease) or nil.
local function cost_of(field)
  local cost = tonumber(field)
  if cost then return cost, nil end
  local c, u = string.match(field, UP_TO_PATTERN)
  return tonumber(c), tonumber(u)
end
-- An item's policy from its fields at ARGV[b + 1...]: algorithm code, limit, window, capacity, then (with_cost)
-- the cost, then a quota's next end and a block's length. Returns the policy, the cost (nil without), the index
-- of the last field read and the most the item takes (a lease; nil for others).
local function policy_at(ARGV, b, with_cost)
  local code = tonumber(ARGV[b + FIELD_CODE])
  local shadow = code < 0
  if shadow then code = -code end
  local has_block = code > BLOCK_FLAG
  if has_block then code = code - BLOCK_FLAG end
  local p = {
    algo = algorithm(code),
    limit = tonumber(ARGV[b + FIELD_LIMIT]),
    window = tonumber(ARGV[b + FIELD_WINDOW]),
    cap = tonumber(ARGV[b + FIELD_CAPACITY]),
    shadow = shadow,
  }
  b = b + POLICY_FIELDS
  local cost, up = nil, nil
  if with_cost then
    cost, up = cost_of(ARGV[b + 1])
    b = b + 1
  end
  if code == CODE_QUOTA then
    p.nxt = tonumber(ARGV[b + 1])
    b = b + 1
  end
  if has_block then
    p.block = tonumber(ARGV[b + 1])
    b = b + 1
  elseif LEAN_PATH and not shadow then
    lean_kind(code, p)
  end
  return p, cost, b, up
end
-- One item's decision on `st`, the state its key has at this point of the call (`old`: as stored, blocked
-- until `untl`): the reply of a blocked key; else the step's, with its new state; a consume's denial of an
-- enforced item with a block writes the block (the state kept as it was) and replies as blocked. An item that
-- takes up to `up` units (a lease) takes as many as fit, its cost plus what the step at its cost leaves, stepped
-- again from the same state (as consume-all.ts does), and replies with the units taken in place of retry_ms.
local function decide_one(op, key, p, cost, old, st, untl, now, slack, up)
  if untl > now then return blocked(untl, now) end
  local new_st, allowed, remaining, reset, retry = p.algo.step(st, p.limit, p.window, p.cap, now, cost, p.nxt)
  if allowed == DENIED and p.block and not p.shadow and op == 'consume' then
    save(key, p.algo, old, reset, slack, now + p.block, now, p.window)
    return blocking(p.block, remaining, reset, retry)
  end
  if allowed == ALLOWED and up and up > cost and cost >= 1 then
    local more = min(up, cost + remaining)
    if more > cost then
      local w_st, w_allowed, w_remaining, w_reset = p.algo.step(st, p.limit, p.window, p.cap, now, more, p.nxt)
      if w_allowed == ALLOWED then return { ALLOWED, w_remaining, w_reset, more }, w_st end
    end
  end
  return { allowed, remaining, reset, retry }, new_st
end
-- The consume of one item (most requests), without the tables that several items need.
local function consume_one(key, p, cost, now, slack, up)
  local old, untl = decode(p.algo, redis.call('GET', key))
  local r, st = decide_one('consume', key, p, cost, old, old, untl, now, slack, up)
  if r[1] == ALLOWED and cost > 0 then save(key, p.algo, st, r[3], slack, 0, now, p.window) end
  return r
end
-- An item: its key, cost and policy's fields in one table (several items may share a policy).
local function item_of(key, p, cost, up)
  return {
    key = key,
    algo = p.algo,
    limit = p.limit,
    window = p.window,
    cap = p.cap,
    cost = cost,
    shadow = p.shadow,
    nxt = p.nxt,
    block = p.block,
    up = up,
  }
end
