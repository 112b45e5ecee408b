-- requires: max, pair_decode, pair_encode, ALLOWED, DENIED, NEVER_FITS, MAX_CHARGED_UNITS
-- provides: period_decode, period_encode, period_newest, period_decide, period_step, period_refund,
--   period_charge
-- The twin of period-counter.ts (stepPeriod, refundPeriod, chargePeriod), shared by the fixed windows and the
-- quota. State: { period, count }, stored by pair_encode (state-codec.lua); the fixed window's integer layout
-- is its own (fixed-window.lua).
local function period_decode(raw)
  local p, n = pair_decode(raw)
  if not p or n < 0 then return false end
  return { p, n }
end
local function period_encode(st) return pair_encode(st[1], st[2]) end
local function period_newest(st, period)
  if st and st[1] > period then return st[1] end
  return period
end
-- the decision on `count` units counted in a period that ends period_end ms from now: allowed, remaining,
-- reset_ms, retry_ms. The one decision of a fixed window, of its lean path (fixed-window.lua) as of its twin.
local function period_decide(count, period_end, limit, cost)
  if cost > limit then
    local reset = 0
    if count > 0 then reset = period_end end
    return DENIED, max(0, limit - count), reset, NEVER_FITS
  end
  local n = count + cost
  if n > limit then return DENIED, max(0, limit - count), period_end, period_end end
  if n == 0 then return ALLOWED, limit, 0, 0 end
  return ALLOWED, limit - n, period_end, 0
end
local function period_step(st, period, period_end, limit, cost)
  local count = 0
  if st and st[1] == period then count = st[2] end
  local allowed, remaining, reset, retry = period_decide(count, period_end, limit, cost)
  if allowed ~= ALLOWED then return st, allowed, remaining, reset, retry end
  local n = count + cost
  if n == 0 then return false, allowed, remaining, reset, retry end
  return { period, n }, allowed, remaining, reset, retry
end
local function period_refund(st, period, amount)
  if not st or st[1] ~= period then return false end
  local count = max(0, st[2] - amount)
  if count > 0 then return { period, count } end
  return false
end
local function period_charge(st, period, amount)
  local count = 0
  if st and st[1] == period then count = st[2] end
  local n = count + amount
  if amount > MAX_CHARGED_UNITS - count then n = max(count, MAX_CHARGED_UNITS) end
  if n > 0 then return { period, n } end
  return false
end
