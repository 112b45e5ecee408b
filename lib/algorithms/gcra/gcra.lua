-- requires: floor, min, max, fmt, ceil_div, byte, planned_encode, planned_decode, rated_decode, ALLOWED, DENIED,
--   NEVER_FITS, MAX_LEAD_US, GCRA_EXPIRY_EPOCH_MS, DEBT_CAP_CAPACITIES
-- provides: gcra_shape, gcra_epoch, gcra_lean_read, gcra_decide, gcra_write, make_GCRA, make_GCRAP
-- The twin of gcra.ts, shared by its two kernels (gcra_twin(per_plan) builds the table of either) and by the
-- lean path of lean.lua (gcra_lean_read, gcra_decide, gcra_write): one decision, gcra_decide. A state is
-- { TAT in µs, limit written with (nil: the policy's) }, stored as the TAT alone (a decimal integer, which Redis
-- keeps as an integer object) or, per plan, by planned_encode (state-codec.lua). A state of the previous twin,
-- the token bucket's (rated_decode: ms counted at, units taken scaled by window_ms, limit written with, or
-- without it), is read as the TAT it stands for, at + ceil(taken × 1000 / limit) µs, and kept as it was while
-- nothing is written.
-- step(st, limit, window_ms, capacity, now_ms, cost) -> new_st, allowed (0/1), remaining, reset_ms, retry_ms
-- mul_div_ceil(a, b, c): ceil(a × b / c) for integers below 2^53 (c below 2^52) and a result below 2^53, exact
-- when a × b is not: the remainder's product is formed bit by bit of b, modulo c.
-- gcra_epoch(w): the epoch of a policy of window w, in µs. gcra_keep(tat, now, w): how long from now (ms) a key
-- holding the TAT `tat` is kept, the slack aside: to the end of the TAT's epoch (GCRA_EXPIRY_EPOCH_MS), which
-- every writer of a TAT alone sets, so that a consume whose TAT stays within its epoch extends nothing
-- (gcra_write).
local function gcra_epoch(w) return min(w, GCRA_EXPIRY_EPOCH_MS) * 1000 end
local function gcra_keep(tat, now, w)
  local epoch = gcra_epoch(w)
  return ceil_div((floor(tat / epoch) + 1) * epoch - now * 1000, 1000)
end
local function mul_div_ceil(a, b, c)
  local q = floor(a / c)
  local r = a - q * c
  if r < 0 then
    q, r = q - 1, r + c
  elseif r >= c then
    q, r = q + 1, r - c
  end
  if r * b < 2 ^ 53 then return q * b + ceil_div(r * b, c) end
  local rest, hq, hr, bit = b, 0, 0, 2 ^ 52
  while bit >= 1 do
    hq, hr = hq * 2, hr * 2
    if hr >= c then
      hq, hr = hq + 1, hr - c
    end
    if rest >= bit then
      rest, hr = rest - bit, hr + r
      if hr >= c then
        hq, hr = hq + 1, hr - c
      end
    end
    bit = bit / 2
  end
  if hr > 0 then hq = hq + 1 end
  return q * b + hq
end
local function gcra_emission(limit, w) return ceil_div(1000 * w, limit) end
-- emission interval (µs) and burst, bounded so that burst × T <= MAX_LEAD_US
local function gcra_shape(limit, w, cap)
  local t = gcra_emission(limit, w)
  return t, min(cap, floor(MAX_LEAD_US / t))
end
-- a lead (µs) of a TAT written with the emission interval tw, in the time of the interval t
local function gcra_converted(lead, t, tw)
  if t == tw then return lead end
  return mul_div_ceil(lead, t, tw)
end
-- The decision of a request of cost on a TAT `lead` µs ahead of now (0 when behind) written with the emission
-- interval tw, for a policy of interval t and burst: allowed, remaining, reset_ms, retry_ms, and for an allowed
-- cost above 0 the TAT's new lead (in the time of t).
local function gcra_decide(lead, t, tw, burst, cost)
  local remaining, reset = max(0, burst - ceil_div(lead, tw)), ceil_div(lead, 1000)
  if cost > burst then return DENIED, remaining, reset, NEVER_FITS end
  local room = (burst - cost) * tw
  if lead > room then return DENIED, remaining, reset, ceil_div(lead - room, 1000) end
  if cost == 0 then return ALLOWED, remaining, reset, 0 end
  local nxt = gcra_converted(lead, t, tw) + cost * t
  return ALLOWED, burst - ceil_div(nxt, t), ceil_div(nxt, 1000), 0, nxt
end
-- the lean path: the TAT's lead over now in µs (nil: another layout than the TAT alone)
local function gcra_lean_read(raw, now)
  if not raw then return 0 end
  local first = byte(raw, 1)
  if first == nil or first < 48 or first > 57 then return nil end
  local tat = tonumber(raw)
  if not tat then return nil end
  return max(0, tat - now * 1000)
end
-- the lean path's write of an allowed request of cost (p from lean_kind): the TAT alone, now + lead + cost × T.
-- With `incr`, where the TAT is ahead of now, moved by INCRBY of the cost's share of time (the key extended only
-- when the TAT leaves its epoch: gcra_keep); else SET. False when Redis refuses the INCRBY (not an integer as
-- Redis writes one, which the twin reads otherwise): nothing was written.
local function gcra_write(key, p, lead, cost, now, slack, incr)
  local share, now_us = cost * p.t, now * 1000
  local tat = now_us + lead + share
  if lead == 0 or not incr then
    redis.call('SET', key, fmt(tat), 'PX', max(gcra_keep(tat, now, p.window) + slack, 1))
    return true
  end
  if type(redis.pcall('INCRBY', key, fmt(share))) ~= 'number' then return false end
  if floor((now_us + lead) / p.epoch) ~= floor(tat / p.epoch) then
    redis.call('PEXPIRE', key, max(gcra_keep(tat, now, p.window) + slack, 1))
  end
  return true
end
local function gcra_decode(raw)
  local first = byte(raw, 1)
  if first == nil then return false end
  if first >= 64 and first < 96 or first >= 32 and first < 64 and string.find(raw, '/', 1, true) then
    local tat, r = planned_decode(raw)
    if not tat or r < 1 then return false end
    return { tat, r }
  end
  if first >= 32 and string.find(raw, '^%-?%d+$') then return { tonumber(raw) } end
  local a, t, r = rated_decode(raw)
  if not a or t < 0 or (r and r < 1) then return false end
  return { false, r, old = { a, t }, raw = raw }
end
-- the TAT (µs) and the limit written with of a state; the previous twin's converted with the policy's limit
local function gcra_tat(st, limit)
  if not st.old then return st[1], st[2] or limit end
  local r = st[2] or limit
  return st.old[1] * 1000 + mul_div_ceil(st.old[2], 1000, r), r
end
local function gcra_twin(per_plan)
  local G = { decode = gcra_decode }
  -- a state read is written back as it was read (a block's write keeps it), a new one as its kernel wrote it
  function G.encode(st)
    if st.raw then return st.raw end
    if st[2] then return planned_encode(st[1], st[2]) end
    return fmt(st[1])
  end
  -- how long from now a state written is kept (reset: until it is spent): a TAT alone to its epoch's end
  function G.keep(st, reset, now, w)
    if st[1] and not st[2] and not st.raw then return max(reset, gcra_keep(st[1], now, w)) end
    return reset
  end
  -- lead of the TAT over now (µs, 0 when behind) and the emission interval of the limit it was written with
  local function standing(st, now_us, limit, w, t)
    if not st then return 0, t end
    local tat, written = gcra_tat(st, limit)
    local tw = t
    if written ~= limit then tw = gcra_emission(written, w) end
    return max(0, tat - now_us), tw
  end
  -- a new state: with its limit per plan, and for a key that had one still counting (lead > 0: a lapsed state is
  -- none, as a store that expired it holds none; not the previous twin's)
  local function state_of(st, tat, limit, lead)
    if per_plan or (lead > 0 and st and st[2] and not st.old) then return { tat, limit } end
    return { tat }
  end
  function G.step(st, limit, w, cap, now, cost)
    local t, burst = gcra_shape(limit, w, cap)
    local now_us = now * 1000
    local lead, tw = standing(st, now_us, limit, w, t)
    local allowed, remaining, reset, retry, nxt = gcra_decide(lead, t, tw, burst, cost)
    if not nxt then return st, allowed, remaining, reset, retry end
    return state_of(st, now_us + nxt, limit, lead), allowed, remaining, reset, retry
  end
  -- in the time of the limit the state was written with, which it keeps
  function G.refund(st, limit, w, cap, now, amount)
    if not st then return false end
    local now_us = now * 1000
    local lead, tw = standing(st, now_us, limit, w, gcra_emission(limit, w))
    local back = amount * tw
    if back >= lead then return false end
    local _, written = gcra_tat(st, limit)
    return state_of(st, now_us + lead - back, written, lead)
  end
  -- past the burst (a debt), the lead clamped at the debt cap (maxLeadUs in gcra.ts: a key already past it keeps
  -- it); a key still counting in the time of the limit it was written with, which it keeps, a lapsed one at the
  -- policy's
  function G.charge(st, limit, w, cap, now, amount)
    local now_us = now * 1000
    local t, burst = gcra_shape(limit, w, cap)
    local lead, tw = standing(st, now_us, limit, w, t)
    local written = limit
    if lead > 0 then
      local _
      _, written = gcra_tat(st, limit)
    else
      tw = t
    end
    local most = max(lead, min(MAX_LEAD_US, (1 + DEBT_CAP_CAPACITIES) * burst * t))
    local nxt = lead + amount * tw
    if amount > floor((most - lead) / tw) then nxt = most end
    return state_of(st, now_us + nxt, written, lead)
  end
  return G
end
-- the twin of `gcra` (a static limit): the TAT alone
local function make_GCRA() return gcra_twin(false) end
-- the twin of `gcraPerPlan` (a limit per request): the TAT and the limit it was written with
local function make_GCRAP() return gcra_twin(true) end
