/**
 * Lua twin of fixed-window.ts. State string: "<window index>:<count>".
 * step(st, limit, window_ms, capacity, now_ms, cost) -> new_st, allowed (0/1), remaining, reset_ms, retry_ms
 */
export const fixedWindowLua = `
local FW = {}
function FW.decode(raw)
  local w, n = string.match(raw, '^(%-?%d+):(%d+)$')
  if not w then return false end
  return { tonumber(w), tonumber(n) }
end
function FW.encode(st) return fmt(st[1]) .. ':' .. fmt(st[2]) end
function FW.step(st, limit, window, cap, now, cost)
  local index = floor(now / window)
  local count = 0
  if st and st[1] == index then count = st[2] end
  local window_end = (index + 1) * window - now
  if cost > limit then
    local reset = 0
    if count > 0 then reset = window_end end
    return st, 0, max(0, limit - count), reset, NEVER
  end
  if count + cost <= limit then
    local n = count + cost
    if n == 0 then return false, 1, limit, 0, 0 end
    return { index, n }, 1, limit - n, window_end, 0
  end
  return st, 0, max(0, limit - count), window_end, window_end
end
function FW.refund(st, limit, window, cap, now, amount)
  local index = floor(now / window)
  if not st or st[1] ~= index then return false end
  local count = max(0, st[2] - amount)
  if count > 0 then return { index, count } end
  return false
end
`;
