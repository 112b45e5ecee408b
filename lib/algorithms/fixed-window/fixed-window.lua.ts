/**
 * Lua twin of fixed-window.ts: the period counter of period-counter.ts with the window index as the period.
 * State string: "<window index>:<count>".
 */
export const fixedWindowLua = `
local FW = { decode = period_decode, encode = period_encode }
function FW.step(st, limit, window, cap, now, cost)
  local index = period_newest(st, floor(now / window))
  return period_step(st, index, (index + 1) * window - now, limit, cost)
end
function FW.refund(st, limit, window, cap, now, amount)
  return period_refund(st, period_newest(st, floor(now / window)), amount)
end
`;

/**
 * Lua twin of fixedWindowFromFirstRequest: the period counter with the window's start (ms) as the period.
 * State string: "<window start>:<count>".
 */
export const fixedWindowFromFirstRequestLua = `
local FWF = { decode = period_decode, encode = period_encode }
local function fwf_start(st, window, now)
  if st and st[1] + window > now then return st[1] end
  return now
end
function FWF.step(st, limit, window, cap, now, cost)
  local start = fwf_start(st, window, now)
  return period_step(st, start, start + window - now, limit, cost)
end
function FWF.refund(st, limit, window, cap, now, amount)
  return period_refund(st, fwf_start(st, window, now), amount)
end
`;
