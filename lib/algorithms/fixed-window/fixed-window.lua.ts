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
