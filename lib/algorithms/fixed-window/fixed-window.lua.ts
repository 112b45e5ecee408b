/**
 * A clock-aligned window's count is stored as one integer, `index × 2^FIXED_WINDOW_COUNT_BITS + count`, which
 * Redis keeps as an integer object (the size of rate-limiter-flexible's counter) and which `INCRBY cost` moves
 * within its window. The index must stay below 2^(53 − FIXED_WINDOW_COUNT_BITS) so that Lua's doubles hold the
 * sum exactly: windows of a second or more until 2106. A state that does not fit (a shorter window, a count
 * of 2^21 or more) is stored as a packed pair (pair_encode), as before; both are read.
 */
export const FIXED_WINDOW_COUNT_BITS = 21;

/**
 * The fixed window's integer layout, defined with the definitions before the twins (the lean path of
 * lean.lua.ts uses it too). fw_int_decode(raw) -> index, count; nil for a value of another layout.
 */
export const fixedWindowCounterLua = `
local FW_SCALE = 2 ^ ${FIXED_WINDOW_COUNT_BITS}
local FW_INDEXES = 2 ^ ${53 - FIXED_WINDOW_COUNT_BITS}
local function fw_int_encode(index, count)
  if index >= 0 and index < FW_INDEXES and count >= 0 and count < FW_SCALE then return fmt(index * FW_SCALE + count) end
  return pair_encode(index, count)
end
-- a state of the integer layout, or nil (its first byte is a digit, and it has no ':' of a text pair)
local function fw_int_decode(raw)
  local first = byte(raw, 1)
  if first == nil or first < 48 or first > 57 then return nil end
  local v = tonumber(raw)
  if not v then return nil end
  local index = floor(v / FW_SCALE)
  return index, v - index * FW_SCALE
end
`;

/**
 * Lua twin of fixed-window.ts: the period counter of period-counter.ts with the window index as the period.
 * State: { window index, count }, stored as one integer (fixedWindowCounterLua) or a packed pair.
 */
export const fixedWindowLua = `
local FW = { encode = function(st) return fw_int_encode(st[1], st[2]) end }
function FW.decode(raw)
  local index, count = fw_int_decode(raw)
  if index then return { index, count } end
  return period_decode(raw)
end
function FW.step(st, limit, window, cap, now, cost)
  local index = period_newest(st, floor(now / window))
  return period_step(st, index, (index + 1) * window - now, limit, cost)
end
function FW.refund(st, limit, window, cap, now, amount)
  return period_refund(st, period_newest(st, floor(now / window)), amount)
end
function FW.charge(st, limit, window, cap, now, amount)
  return period_charge(st, period_newest(st, floor(now / window)), amount)
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
function FWF.charge(st, limit, window, cap, now, amount)
  return period_charge(st, fwf_start(st, window, now), amount)
end
`;
