-- requires: min, max, log_decode, log_encode, NEVER_FITS, MAX_CHARGED_UNITS
-- provides: make_SWL
-- Lua twin of sliding-window-log.ts. State: entries (time ms, cost), oldest first, stored by log_encode (state-codec.lua).
-- A state is a pair of arrays { times, costs }.
-- step(st, limit, window_ms, capacity, now_ms, cost) -> new_st, allowed (0/1), remaining, reset_ms, retry_ms
local function make_SWL()
  local SWL = {}
  function SWL.decode(raw)
    local times, costs = log_decode(raw)
    return { times, costs }
  end
  function SWL.encode(st) return log_encode(st[1], st[2]) end
  local function swl_alive(st, w, now)
    local times, costs = {}, {}
    if st then
      for i = 1, #st[1] do
        if st[1][i] + w > now then
          times[#times + 1] = st[1][i]
          costs[#costs + 1] = st[2][i]
        end
      end
    end
    return times, costs
  end
  local function swl_key_time(st, now)
    if st and #st[1] > 0 and st[1][#st[1]] > now then return st[1][#st[1]] end
    return now
  end
  local function swl_reset(times, w, now)
    if #times == 0 then return 0 end
    return times[#times] + w - now
  end
  local function swl_used(costs)
    local used = 0
    for i = 1, #costs do
      used = used + costs[i]
    end
    return used
  end
  -- `amount` units taken at `at`: the newest entry's, when it is of that time, else a new one
  local function swl_add(times, costs, at, amount)
    local last = #times
    if last > 0 and times[last] == at then
      costs[last] = costs[last] + amount
    else
      times[last + 1] = at
      costs[last + 1] = amount
    end
  end
  function SWL.step(st, limit, w, cap, now, cost)
    local at = swl_key_time(st, now)
    local times, costs = swl_alive(st, w, at)
    local used = swl_used(costs)
    if cost <= limit and used + cost <= limit then
      if cost > 0 then swl_add(times, costs, at, cost) end
      local new_st = false
      if #times > 0 then new_st = { times, costs } end
      return new_st, 1, limit - used - cost, swl_reset(times, w, now), 0
    end
    local retry = NEVER_FITS
    if cost <= limit then
      local need = used + cost - limit
      local freed = 0
      for i = 1, #times do
        freed = freed + costs[i]
        if freed >= need then
          retry = times[i] + w - now
          break
        end
      end
    end
    return st, 0, max(0, limit - used), swl_reset(times, w, now), retry
  end
  -- gives `amount` units back, the newest entries first (the oldest first for a concurrency limit's leases)
  function SWL.refund_from(st, w, now, amount, oldest_first)
    local times, costs = swl_alive(st, w, swl_key_time(st, now))
    local left = amount
    local i, last, step = #times, 1, -1
    if oldest_first then
      i, last, step = 1, #times, 1
    end
    while left > 0 and (i - last) * step <= 0 do
      local take = min(costs[i], left)
      costs[i] = costs[i] - take
      left = left - take
      i = i + step
    end
    local kept_t, kept_c = {}, {}
    for j = 1, #times do
      if costs[j] > 0 then
        kept_t[#kept_t + 1] = times[j]
        kept_c[#kept_c + 1] = costs[j]
      end
    end
    if #kept_t > 0 then return { kept_t, kept_c } end
    return false
  end
  function SWL.refund(st, limit, w, cap, now, amount) return SWL.refund_from(st, w, now, amount, false) end
  function SWL.charge(st, limit, w, cap, now, amount)
    local at = swl_key_time(st, now)
    local times, costs = swl_alive(st, w, at)
    local added = min(amount, max(0, MAX_CHARGED_UNITS - swl_used(costs)))
    if added > 0 then swl_add(times, costs, at, added) end
    if #times > 0 then return { times, costs } end
    return false
  end
  return SWL
end
