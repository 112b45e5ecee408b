-- requires: max, byte, spread, fw_lean_read, fw_decide, fw_lean_write, gcra_shape, gcra_epoch,
--   gcra_lean_read, gcra_decide, gcra_write, ALLOWED, REPLY_WIDTH, CODE_FIXED_WINDOW, CODE_GCRA
-- provides: lean_kind, lean_one, lean_items, lean_request, LEAN_KEY, LEAN_P, LEAN_COST, LEAN_ARG
-- The lean consume: the most common shape of a request — enforced policies without a block, a lease or shadow
-- mode — decided without consume_one's and decide_items' tables (items, states, replies): a fixed window and a
-- GCRA of a static limit with the numbers in locals, by their twins' own functions (fixed-window.lua,
-- gcra.lua), any other kernel with its twin's step and codec. A value of a layout it does not read (a block;
-- for a fixed window or a GCRA, a state of an earlier version or a GCRA limit per plan) sends the request to
-- the twins' path, with every key as it was.
--
-- Each reads its key (GET; a request of several items reads all its keys in one MGET), decides, and writes
-- only when the request is allowed: a denial sends no write command, so a flood of denials costs replicas, the
-- AOF and RDB's save points nothing. An allowed fixed window within its window, or a GCRA whose TAT is ahead
-- of now (one item), then moves its key by INCRBY (its TTL already outlives what it holds); a new key, one of
-- another window or a TAT behind now is SET.
--
-- Why read first: they once counted first (INCRBY, whose reply is the state before it plus the cost) and took a
-- denial back (DECRBY): one command for the commonest allowed request, but two writes per denial. No command
-- writes only when the sum fits (BITFIELD OVERFLOW FAIL is a write command, and does not fit these layouts), so
-- a denial that writes nothing needs the state read first. What it cost, per decision (the outer FCALL's time
-- in INFO commandstats, 5,000 requests over 5,000 keys, 50 in flight, medians of 9 interleaved rounds on a busy
-- 2-core machine; then redis-server's instructions under callgrind, all of them, I/O included), before → after:
--   fixed window, allowed within its window   2.84 → 3.60 µs   19.9k → 27.4k   INCRBY → GET + INCRBY
--   fixed window, allowed, new key            6.67 → 6.16 µs   38.3k → 35.1k   INCRBY + SET → GET + SET
--   fixed window, denied                      3.00 → 2.49 µs   26.2k → 21.6k   INCRBY + DECRBY → GET
--   GCRA, allowed, TAT ahead                  3.45 → 3.45 µs   22.3k → 31.4k   INCRBY → GET + INCRBY
--   GCRA, allowed, new key                    7.81 → 6.23 µs   43.9k → 40.7k   INCRBY + SET → GET + SET
--   GCRA, denied                              3.83 → 2.84 µs   34.2k → 24.9k   INCRBY + DECRBY → GET
--   3 fixed windows, allowed                  8.62 → 10.06 µs  62.6k → 86.0k
--   3 fixed windows, the last denies          10.38 → 9.52 µs  88.9k → 72.1k
--
-- lean_kind(code, p): marks an enforced policy without a block (p from policy_at) as lean (unless LEAN_PATH is
-- off: a program assembled without it, for the conformance suite). lean_one(key, p, cost, now, slack, out, arg)
-- and lean_items(n, now, slack, out) (the items in LEAN_KEY, LEAN_P, LEAN_COST and LEAN_ARG, the cost's field
-- or nil; distinct keys: lean_request) append the replies and return true, or false having written nothing.
-- All-or-nothing as decide_items, and a denied request writes nothing.
local TWIN = 'twin'
local function lean_kind(code, p)
  p.lean = TWIN
  if code == CODE_FIXED_WINDOW then p.lean = CODE_FIXED_WINDOW end
  if code == CODE_GCRA then
    p.lean = CODE_GCRA
    p.t, p.burst = gcra_shape(p.limit, p.window, p.cap)
    p.epoch = gcra_epoch(p.window)
  end
end
-- an item's state from its key's value (raw: GET's reply, or MGET's), nil for a layout the lean path leaves to
-- the twins' (for any other kernel: a block)
local function lean_state(raw, p, now, cost)
  if p.lean == CODE_FIXED_WINDOW then return fw_lean_read(raw, p.window, now, cost) end
  if p.lean == CODE_GCRA then return gcra_lean_read(raw, now) end
  if not raw then return false end
  if byte(raw, 1) == 33 then return nil end
  return p.algo.decode(raw)
end
-- allowed, remaining, reset_ms, retry_ms, and for any other kernel the new state (its twin's step)
local function lean_decide(p, a, b, now, cost)
  if p.lean == CODE_FIXED_WINDOW then return fw_decide(p.limit, p.window, a, b, now, cost) end
  if p.lean == CODE_GCRA then return gcra_decide(a, p.t, p.t, p.burst, cost) end
  local new_st, allowed, remaining, reset, retry = p.algo.step(a, p.limit, p.window, p.cap, now, cost, p.nxt)
  return allowed, remaining, reset, retry, new_st
end
-- an allowed item's write (a denied one writes nothing); `incr`: a GCRA's TAT ahead is moved by INCRBY (one
-- item: false when Redis refuses it, having written nothing), else SET
local function lean_write(key, p, a, b, c, now, cost, reset, slack, arg, new_st, incr)
  if cost <= 0 then return true end
  if p.lean == CODE_FIXED_WINDOW then
    fw_lean_write(key, a, b + cost, c, reset, slack, arg)
  elseif p.lean == CODE_GCRA then
    return gcra_write(key, p, a, cost, now, slack, incr)
  elseif new_st then
    redis.call('SET', key, p.algo.encode(new_st), 'PX', max(max(reset, 0) + slack, 1))
  else
    redis.call('DEL', key)
  end
  return true
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
  if allowed == ALLOWED and cost > 0 then
    if new_st then
      redis.call('SET', key, p.algo.encode(new_st), 'PX', max(max(reset, 0) + slack, 1))
    else
      redis.call('DEL', key)
    end
  end
  local at = #out
  out[at + 1], out[at + 2], out[at + 3], out[at + 4] = allowed, remaining, reset, retry
  return true
end
local function lean_one(key, p, cost, now, slack, out, arg)
  if p.lean == TWIN then return twin_one(key, p, cost, now, slack, out) end
  if p.lean == CODE_FIXED_WINDOW and (cost < 1 or cost > p.limit) then return false end
  local a, b, c = lean_state(redis.call('GET', key), p, now, cost)
  if a == nil then return false end
  local allowed, remaining, reset, retry = lean_decide(p, a, b, now, cost)
  if allowed == ALLOWED and not lean_write(key, p, a, b, c, now, cost, reset, slack, arg or cost, nil, true) then
    return false
  end
  local at = #out
  out[at + 1], out[at + 2], out[at + 3], out[at + 4] = allowed, remaining, reset, retry
  return true
end
local LEAN_KEY, LEAN_P, LEAN_COST, LEAN_ARG = {}, {}, {}, {}
local LA, LB, LC, LOK, LREM, LRESET, LRETRY, LNEW = {}, {}, {}, {}, {}, {}, {}, {}
-- all-or-nothing as decide_items: every item read (one MGET: a call's keys share a Cluster slot,
-- across-slots.ts) and decided before anything is written, and written only when every item is allowed (a
-- denial writes nothing, not even to take back what an earlier item counted); an allowed item of a denied
-- request then replies as it stands (its step at cost 0 on the state found)
local function lean_items(count, now, slack, out)
  local all = true
  local raws = redis.call('MGET', spread(LEAN_KEY, 1, count))
  for i = 1, count do
    local p, cost = LEAN_P[i], LEAN_COST[i]
    local a, b, c = lean_state(raws[i], p, now, cost)
    if a == nil then return false end
    LA[i], LB[i], LC[i] = a, b, c
    LOK[i], LREM[i], LRESET[i], LRETRY[i], LNEW[i] = lean_decide(p, a, b, now, cost)
    if LOK[i] ~= ALLOWED then all = false end
  end
  local n = #out
  for i = 1, count do
    local p, cost = LEAN_P[i], LEAN_COST[i]
    if all then
      lean_write(LEAN_KEY[i], p, LA[i], LB[i], LC[i], now, cost, LRESET[i], slack, LEAN_ARG[i], LNEW[i], false)
    end
    if all or LOK[i] ~= ALLOWED then
      out[n + 1], out[n + 2], out[n + 3], out[n + 4] = LOK[i], LREM[i], LRESET[i], LRETRY[i]
    else
      local _, remaining, reset = lean_decide(p, LA[i], LB[i], now, 0)
      out[n + 1], out[n + 2], out[n + 3], out[n + 4] = ALLOWED, remaining, reset, 0
    end
    n = n + REPLY_WIDTH
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
    if not lean or lean == CODE_FIXED_WINDOW and (cost < 1 or cost > p.limit) then return false end
    for j = 1, i - 1 do
      if LEAN_KEY[j] == LEAN_KEY[i] then return false end
    end
  end
  return true
end
