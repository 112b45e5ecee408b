/**
 * Lua twin of quota.ts. State string: "<period start ms>:<used>". Lua knows no time zones, so the caller
 * passes the period: window_ms carries its start and capacity its end (both in ms since the epoch).
 * step(st, limit, period_start, period_end, now_ms, cost) -> new_st, allowed (0/1), remaining, reset_ms, retry_ms
 */
export const quotaLua = `
local QUOTA = {}
function QUOTA.decode(raw)
  local s, n = string.match(raw, '^(%-?%d+):(%d+)$')
  if not s then return false end
  return { tonumber(s), tonumber(n) }
end
function QUOTA.encode(st) return fmt(st[1]) .. ':' .. fmt(st[2]) end
function QUOTA.step(st, limit, start, finish, now, cost)
  local used = 0
  if st and st[1] == start then used = st[2] end
  local period_end = finish - now
  if cost > limit then
    local reset = 0
    if used > 0 then reset = period_end end
    return st, 0, max(0, limit - used), reset, NEVER
  end
  if used + cost <= limit then
    local n = used + cost
    if n == 0 then return false, 1, limit, 0, 0 end
    return { start, n }, 1, limit - n, period_end, 0
  end
  return st, 0, max(0, limit - used), period_end, period_end
end
function QUOTA.refund(st, limit, start, finish, now, amount)
  if not st or st[1] ~= start then return false end
  local used = max(0, st[2] - amount)
  if used > 0 then return { start, used } end
  return false
end
`;
