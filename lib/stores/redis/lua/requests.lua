-- requires: fmt, load, emit, blocked, peek, save, decide_one, cost_of, lean_one, consume_one, lean_request,
--   lean_items, item_of, clock, policy_at, LEAN_KEY, LEAN_P, LEAN_COST, LEAN_ARG, ALLOWED, BATCH_RUN
-- provides: decide_items, batch
-- The dispatcher's requests of several items, and its batch of requests (both defined once, with the helpers of
-- dispatcher.lua).
--
-- decide_items(op, items, now, slack, out): decides `items` (item_of) for 'peek', 'refund', 'charge', 'block',
-- 'unblock', 'consume' or 'check', writes, and appends REPLY_WIDTH integers per item to `out` (nothing for
-- block and unblock).
--
-- batch(KEYS, ARGV): several consumes in one call. ARGV: 'batch', the time (or ''), the TTL slack, the number of
-- policies, each policy's fields as an item's without the cost, then per request its number of items and, per
-- item, the number of its policy (1-based) and its cost field (with its up-to for a lease) — or, for a run of
-- requests of the same items (policies and costs), BATCH_RUN (protocol.ts), their number, then their items'
-- fields once; KEYS: the items' keys, in order. Each request is decided as its own consume, all-or-nothing,
-- after the ones before it; returns their replies one after the other.
local function decide_items(op, items, now, slack, out)
  local original, blocks = {}, {}
  if op == 'peek' then
    for i = 1, #items do
      local st, untl = load(original, blocks, items[i])
      if untl > now then
        emit(out, blocked(untl, now))
      else
        emit(out, peek(items[i], st, now))
      end
    end
    return
  end

  -- block: blocks each key until now + the item's cost (ms), its state kept; unblock: lifts the blocks
  if op == 'block' or op == 'unblock' then
    for i = 1, #items do
      local it = items[i]
      local st = load(original, blocks, it)
      local untl = 0
      if op == 'block' then untl = now + it.cost end
      save(it.key, it.algo, st, peek(it, st, now)[3], slack, untl, now, it.window)
    end
    return
  end

  -- refund: gives each item's cost back; charge: takes it without deciding, past the limit (a shadow item, or a
  -- cost of 0, is not charged; a concurrency limit, whose twin has no charge, is refused). A block stays (the
  -- units charged count once it ends).
  if op == 'refund' or op == 'charge' then
    for i = 1, #items do
      local it = items[i]
      local old, untl = load(original, blocks, it)
      local st = old
      if op == 'refund' then
        st = it.algo.refund(old, it.limit, it.window, it.cap, now, it.cost)
      elseif it.cost > 0 and not it.shadow then
        if not it.algo.charge then error({ err = 'nest-rate-limit: a concurrency limit cannot be charged' }) end
        st = it.algo.charge(old, it.limit, it.window, it.cap, now, it.cost)
      end
      original[it.key] = st
      local r = peek(it, st, now)
      save(it.key, it.algo, st, r[3], slack, untl, now, it.window)
      if untl > now then r = blocked(untl, now) end
      emit(out, r)
    end
    return
  end

  -- consume: decide every item, write only when all enforced items are allowed (and then the allowed items
  -- only: a shadow item that would deny consumes nothing); a denial of an item with a block writes the block
  -- whatever the others decide; check: decide, report as a denied consume does (the allowed items as they
  -- stand), write nothing
  local working, states, results = {}, {}, {}
  local all_allowed = true
  for i = 1, #items do
    local it = items[i]
    local old, untl = load(original, blocks, it)
    local st = working[it.key]
    if st == nil then st = old end
    local r, new_st = decide_one(op, it.key, it, it.cost, old, st, untl, now, slack, it.up)
    results[i] = r
    if r[1] ~= ALLOWED then
      if not it.shadow then all_allowed = false end
    elseif it.cost > 0 then
      states[i] = new_st or false
      working[it.key] = states[i]
    end
  end
  if all_allowed and op == 'consume' then
    local last = {}
    for i = 1, #items do
      if states[i] ~= nil then last[items[i].key] = i end
    end
    for i = 1, #items do
      local it = items[i]
      if last[it.key] == i then save(it.key, it.algo, states[i], results[i][3], slack, 0, now, it.window) end
      emit(out, results[i])
    end
    return
  end
  for i = 1, #items do
    local it = items[i]
    if results[i][1] == ALLOWED then
      local _, _, remaining, reset = it.algo.step(original[it.key], it.limit, it.window, it.cap, now, 0, it.nxt)
      emit(out, { ALLOWED, remaining, reset, 0 })
    else
      emit(out, results[i])
    end
  end
end
-- The items of a request of a batch, `count` items whose fields (policy number, cost) start after ARGV[at], into
-- LEAN_P, LEAN_COST and LEAN_ARG (a run's requests share them); whether none takes up to more (a lease). Fields
-- are read without tonumber where they allow it (strtod, which Lua's tonumber calls, is a good part of a lean
-- item's time): policies looked up by their number's text, costs read once per call for each distinct field.
local function items_at(ARGV, at, count, policies, costs)
  local lean = true
  for i = 1, count do
    local arg = ARGV[at + 2 * i]
    local cost, up = costs[arg], nil
    if cost == nil then
      cost, up = cost_of(arg)
      if up == nil then costs[arg] = cost end
    end
    LEAN_P[i], LEAN_COST[i], LEAN_ARG[i] = policies[ARGV[at + 2 * i - 1]], cost, arg
    if up then lean = false end
  end
  return lean
end
-- One request: its items in LEAN_KEY, LEAN_P, LEAN_COST and LEAN_ARG
local function decide_request(count, lean, now, slack, out)
  if count == 1 then
    local key, p, cost = LEAN_KEY[1], LEAN_P[1], LEAN_COST[1]
    if lean and p.lean and lean_one(key, p, cost, now, slack, out, LEAN_ARG[1]) then return end
    local _, up = cost_of(LEAN_ARG[1])
    emit(out, consume_one(key, p, cost, now, slack, up))
    return
  end
  if lean and lean_request(count) and lean_items(count, now, slack, out) then return end
  local items = {}
  for i = 1, count do
    local _, up = cost_of(LEAN_ARG[i])
    items[i] = item_of(LEAN_KEY[i], LEAN_P[i], LEAN_COST[i], up)
  end
  decide_items('consume', items, now, slack, out)
end
-- A run of one-item requests (most requests under load): the item's fields once, the keys one after the other.
local function decide_run_of_one(KEYS, k, runs, lean, now, slack, out)
  local p, cost, arg = LEAN_P[1], LEAN_COST[1], LEAN_ARG[1]
  for i = k + 1, k + runs do
    if not (lean and p.lean and lean_one(KEYS[i], p, cost, now, slack, out, arg)) then
      LEAN_KEY[1] = KEYS[i]
      decide_request(1, false, now, slack, out)
    end
  end
end
local function batch(KEYS, ARGV)
  local now, slack = clock(ARGV[2]), tonumber(ARGV[3])
  local policies, b = {}, 4
  for i = 1, tonumber(ARGV[4]) do
    local p, _
    p, _, b = policy_at(ARGV, b, false)
    policies[fmt(i)] = p
  end
  local costs = {}
  local out, k, n = {}, 0, #ARGV
  b = b + 1
  while b <= n do
    local field = ARGV[b]
    local count, runs = 1, 1
    if field ~= '1' then count = tonumber(field) end
    if count == BATCH_RUN then
      runs, count = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2])
      b = b + 2
    end
    local lean = items_at(ARGV, b, count, policies, costs)
    if count == 1 and runs > 1 then
      decide_run_of_one(KEYS, k, runs, lean, now, slack, out)
      k = k + runs
    else
      for _ = 1, runs do
        for i = 1, count do
          LEAN_KEY[i] = KEYS[k + i]
        end
        decide_request(count, lean, now, slack, out)
        k = k + count
      end
    end
    b = b + 1 + 2 * count
  end
  return out
end
