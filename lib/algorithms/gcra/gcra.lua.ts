/**
 * Lua twin of gcra.ts. State: the TAT in whole ms and its remainder in 1/limit ms, stored by pair_encode
 * (state-codec.lua.ts).
 * step(st, limit, window_ms, capacity, now_ms, cost) -> new_st, allowed (0/1), remaining, reset_ms, retry_ms
 */
export const gcraLua = `
local GCRA = {}
function GCRA.decode(raw)
  local t, r = pair_decode(raw)
  if not t or r < 0 then return false end
  return { t, r }
end
function GCRA.encode(st) return pair_encode(st[1], st[2]) end
local function gcra_ahead(st, limit, now)
  if not st then return 0 end
  return max(0, (st[1] - now) * limit + st[2])
end
local function gcra_at(ahead, limit, now)
  if ahead == 0 then return false end
  local whole = floor(ahead / limit)
  return { now + whole, ahead - whole * limit }
end
function GCRA.step(st, limit, w, cap, now, cost)
  local full = cap * w
  local ahead = gcra_ahead(st, limit, now)
  local need = cost * w
  if cost > cap or ahead + need > full then
    local retry = NEVER
    if cost <= cap then retry = ceil_div(ahead + need - full, limit) end
    return st, 0, floor(max(0, full - ahead) / w), ceil_div(ahead, limit), retry
  end
  local nxt = ahead + need
  return gcra_at(nxt, limit, now), 1, floor((full - nxt) / w), ceil_div(nxt, limit), 0
end
function GCRA.refund(st, limit, w, cap, now, amount)
  local ahead = gcra_ahead(st, limit, now)
  return gcra_at(max(0, ahead - amount * w), limit, now)
end
`;
