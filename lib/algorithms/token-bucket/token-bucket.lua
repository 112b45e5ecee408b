-- requires: floor, min, max, ceil_div, rated_decode, rated_encode, NEVER_FITS, MAX_TAKEN, DEBT_CAP_CAPACITIES
-- provides: make_TB
-- Lua twin of token-bucket.ts. State: the time in ms the units were counted at, the units taken scaled by
-- window_ms and the limit they were written with, stored by rated_encode (state-codec.lua); a state of an
-- earlier version, without its limit (pair_encode), drains at the current one.
-- step(st, limit, window_ms, capacity, now_ms, cost) -> new_st, allowed (0/1), remaining, reset_ms, retry_ms
local function make_TB()
  local TB = {}
  function TB.decode(raw)
    local a, t, r = rated_decode(raw)
    if not a or t < 0 or (r and r < 1) then return false end
    return { t, a, r }
  end
  function TB.encode(st) return rated_encode(st[2], st[1], st[3]) end
  -- units taken at now, the time they are counted at and the rate they drain at until the next write
  local function tb_taken(st, limit, now)
    if not st then return 0, now, limit end
    local rate = st[3] or limit
    local elapsed = now - st[2]
    if elapsed <= 0 then return st[1], st[2], rate end
    return max(0, st[1] - elapsed * rate), now, rate
  end
  function TB.step(st, limit, w, cap, now, cost)
    local full = cap * w
    local taken, at, rate = tb_taken(st, limit, now)
    local need = cost * w
    if cost > cap or taken + need > full then
      local retry = NEVER_FITS
      if cost <= cap then retry = ceil_div(taken + need - full, rate) end
      return st, 0, floor(max(0, full - taken) / w), ceil_div(taken, rate), retry
    end
    if cost == 0 then return st, 1, floor((full - taken) / w), ceil_div(taken, rate), 0 end
    local nxt = taken + need
    return { nxt, at, limit }, 1, floor((full - nxt) / w), ceil_div(nxt, limit), 0
  end
  function TB.refund(st, limit, w, cap, now, amount)
    local taken, at = tb_taken(st, limit, now)
    local nxt = max(0, taken - amount * w)
    if nxt > 0 then return { nxt, at, limit } end
    return false
  end
  -- clamped at the debt cap (maxTaken in token-bucket.ts); a key already past it keeps what it owes
  function TB.charge(st, limit, w, cap, now, amount)
    local taken, at = tb_taken(st, limit, now)
    local most = max(taken, min(MAX_TAKEN, (1 + DEBT_CAP_CAPACITIES) * cap * w))
    local nxt = taken + amount * w
    if amount > floor((most - taken) / w) then nxt = most end
    if nxt > 0 then return { nxt, at, limit } end
    return false
  end
  return TB
end
