/**
 * Lua twin of gcra.ts. State string: "<TAT whole ms>:<remainder in 1/limit ms>".
 * step(st, limit, window_ms, capacity, now_ms, cost) -> new_st, allowed (0/1), remaining, reset_ms, retry_ms
 */
export const gcraLua = `
local GCRA = {}
function GCRA.decode(raw)
  local t, r = string.match(raw, '^(%-?%d+):(%d+)$')
  if not t then return false end
  return { tonumber(t), tonumber(r) }
end
function GCRA.encode(st) return fmt(st[1]) .. ':' .. fmt(st[2]) end
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
