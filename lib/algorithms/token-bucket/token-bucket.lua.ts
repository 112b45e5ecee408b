/**
 * Lua twin of token-bucket.ts. State: the time in ms the units were counted at and the units taken scaled by
 * window_ms, stored by pair_encode (state-codec.lua.ts).
 * step(st, limit, window_ms, capacity, now_ms, cost) -> new_st, allowed (0/1), remaining, reset_ms, retry_ms
 */
export const tokenBucketLua = `
local TB = {}
function TB.decode(raw)
  local a, t = pair_decode(raw)
  if not a or t < 0 then return false end
  return { t, a }
end
function TB.encode(st) return pair_encode(st[2], st[1]) end
local function tb_taken(st, limit, now)
  if not st then return 0, now end
  local elapsed = now - st[2]
  if elapsed <= 0 then return st[1], st[2] end
  return max(0, st[1] - elapsed * limit), now
end
function TB.step(st, limit, w, cap, now, cost)
  local full = cap * w
  local taken, at = tb_taken(st, limit, now)
  local need = cost * w
  if cost > cap or taken + need > full then
    local retry = NEVER
    if cost <= cap then retry = ceil_div(taken + need - full, limit) end
    return st, 0, floor(max(0, full - taken) / w), ceil_div(taken, limit), retry
  end
  local nxt = taken + need
  local new_st = false
  if nxt > 0 then new_st = { nxt, at } end
  return new_st, 1, floor((full - nxt) / w), ceil_div(nxt, limit), 0
end
function TB.refund(st, limit, w, cap, now, amount)
  local taken, at = tb_taken(st, limit, now)
  local nxt = max(0, taken - amount * w)
  if nxt > 0 then return { nxt, at } end
  return false
end
`;
