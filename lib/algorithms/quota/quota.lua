-- requires: period_decode, period_encode, period_newest, period_step, period_refund, period_charge
-- provides: make_QUOTA
-- Lua twin of quota.ts: the period counter with the period's start as its key. Lua knows no time zones, so the
-- caller passes the period: window_ms carries its start, capacity its end and nxt the end of the next period
-- (all in ms since the epoch). State: period start (ms) and units used, stored by
-- pair_encode (state-codec.lua).
local function make_QUOTA()
  local QUOTA = { decode = period_decode, encode = period_encode }
  function QUOTA.step(st, limit, start, finish, now, cost, nxt)
    if st and st[1] > start then return period_step(st, st[1], nxt - now, limit, cost) end
    return period_step(st, start, finish - now, limit, cost)
  end
  function QUOTA.refund(st, limit, start, finish, now, amount)
    return period_refund(st, period_newest(st, start), amount)
  end
  function QUOTA.charge(st, limit, start, finish, now, amount)
    return period_charge(st, period_newest(st, start), amount)
  end
  return QUOTA
end
