-- requires: floor, min, max, triple_decode, triple_encode, NEVER_FITS, MAX_CHARGED_UNITS
-- provides: make_SWC
-- Lua twin of sliding-window-counter.ts. State: window index, current and previous counts, stored by
-- triple_encode (state-codec.lua).
-- step(st, limit, window_ms, capacity, now_ms, cost) -> new_st, allowed (0/1), remaining, reset_ms, retry_ms
local function make_SWC()
  local SWC = {}
  function SWC.decode(raw)
    local w, c, p = triple_decode(raw)
    if not w then return false end
    return { w, c, p }
  end
  function SWC.encode(st) return triple_encode(st[1], st[2], st[3]) end
  local function swc_newest(st, w, now)
    local index = floor(now / w)
    if st and st[1] > index then return st[1], st[1] * w end
    return index, now
  end
  local function swc_normalize(st, index)
    if not st then return 0, 0 end
    if st[1] == index then return st[2], st[3] end
    if st[1] == index - 1 then return 0, st[2] end
    return 0, 0
  end
  local function swc_reset(cur, previous, index, w, now)
    if cur > 0 then return (index + 2) * w - now end
    if previous > 0 then return (index + 1) * w - now end
    return 0
  end
  function SWC.step(st, limit, w, cap, now, cost)
    local index, at = swc_newest(st, w, now)
    local elapsed = at - index * w
    local current, previous = swc_normalize(st, index)
    local used = current * w + previous * (w - elapsed)
    local capacity = limit * w
    local remaining_now = max(0, floor((capacity - used) / w))
    if cost > limit then return st, 0, remaining_now, swc_reset(current, previous, index, w, now), NEVER_FITS end
    if used + cost * w <= capacity then
      local nxt = current + cost
      local new_st = false
      if nxt > 0 or previous > 0 then new_st = { index, nxt, previous } end
      return new_st, 1, floor((capacity - used - cost * w) / w), swc_reset(nxt, previous, index, w, now), 0
    end
    local retry
    if current + cost <= limit then
      local slack = (limit - current - cost) * w
      retry = w - floor(slack / previous) - elapsed + (at - now)
    else
      local slack = (limit - cost) * w
      retry = (index + 1) * w + max(0, w - floor(slack / current)) - now
    end
    return st, 0, remaining_now, swc_reset(current, previous, index, w, now), retry
  end
  function SWC.refund(st, limit, w, cap, now, amount)
    local index = swc_newest(st, w, now)
    local current, previous = swc_normalize(st, index)
    local from_current = min(current, amount)
    local next_previous = max(0, previous - (amount - from_current))
    local next_current = current - from_current
    if next_current > 0 or next_previous > 0 then return { index, next_current, next_previous } end
    return false
  end
  function SWC.charge(st, limit, w, cap, now, amount)
    local index = swc_newest(st, w, now)
    local current, previous = swc_normalize(st, index)
    local most = floor(MAX_CHARGED_UNITS / w)
    local nxt = current + amount
    if amount > most - current then nxt = max(current, most) end
    if nxt > 0 or previous > 0 then return { index, nxt, previous } end
    return false
  end
  return SWC
end
