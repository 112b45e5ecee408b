/**
 * Lua twin of token-bucket.ts. State: the time in ms the tokens were counted at and the tokens scaled by window_ms,
 * stored by pair_encode (state-codec.lua.ts).
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
local function tb_refill(st, full, limit, now)
  if not st then return full, now end
  local elapsed = now - st[2]
  if elapsed <= 0 then return min(full, st[1]), st[2] end
  return min(full, st[1] + elapsed * limit), now
end
function TB.step(st, limit, w, cap, now, cost)
  local full = cap * w
  local tokens, at = tb_refill(st, full, limit, now)
  local need = cost * w
  if cost > cap or need > tokens then
    local retry = NEVER
    if cost <= cap then retry = ceil_div(need - tokens, limit) end
    return st, 0, floor(tokens / w), ceil_div(full - tokens, limit), retry
  end
  local left = tokens - need
  local new_st = false
  if left < full then new_st = { left, at } end
  return new_st, 1, floor(left / w), ceil_div(full - left, limit), 0
end
function TB.refund(st, limit, w, cap, now, amount)
  local full = cap * w
  local tokens, at = tb_refill(st, full, limit, now)
  local nxt = min(full, tokens + amount * w)
  if nxt < full then return { nxt, at } end
  return false
end
`;
