-- requires: floor, max, fmt, byte, pair_encode, period_decode, period_encode, period_newest, period_decide,
--   period_step, period_refund, period_charge, FIXED_WINDOW_COUNT_BITS
-- provides: fw_lean_read, fw_decide, fw_lean_write, make_FW, make_FWF
-- The twin of fixed-window.ts: the period counter (period-counter.lua) with the window index as the period,
-- for the twins' path (make_FW) and the lean path of lean.lua (fw_lean_read, fw_decide, fw_lean_write), which
-- decide by the one period_decide. And the twin of fixedWindowFromFirstRequest (make_FWF), with the window's
-- start (ms) as the period, stored as "<window start>:<count>".
--
-- A clock-aligned window's count is stored as one integer, `index × 2^FIXED_WINDOW_COUNT_BITS + count`, which
-- Redis keeps as an integer object (the size of rate-limiter-flexible's counter) and which `INCRBY cost` moves
-- within its window. The index must stay below 2^(53 − FIXED_WINDOW_COUNT_BITS) so that Lua's doubles hold the
-- sum exactly: windows of a second or more until 2106. A state that does not fit (a shorter window, a count
-- of 2^21 or more) is stored as a packed pair (pair_encode), as before; both are read.
local FW_SCALE = 2 ^ FIXED_WINDOW_COUNT_BITS
local FW_INDEXES = 2 ^ (53 - FIXED_WINDOW_COUNT_BITS)
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
-- the lean path: how an allowed request writes its key, told by the state it read: FW_KEPT, INCRBY of the
-- cost (the key holds this window's count in the integer layout, and its TTL already ends with the window);
-- FW_SET, a SET of the new state (no key, another window, or a count that leaves the integer layout)
local FW_KEPT, FW_SET = 1, 2
-- the state in raw (GET's reply) before a request of cost: the window's index (the newest the key has seen),
-- the count in it and how an allowed request writes; nil for a value of another layout (or past the integers
-- a double holds exactly), which the twins' path reads
local function fw_lean_read(raw, window, now, cost)
  local index = floor(now / window)
  if not raw then return index, 0, FW_SET end
  local first = byte(raw, 1)
  if first == nil or first < 48 or first > 57 then return nil end
  local v = tonumber(raw)
  if not v or v >= 2 ^ 53 then return nil end
  local stored = floor(v / FW_SCALE)
  if stored < index then return index, 0, FW_SET end
  local count = v - stored * FW_SCALE
  if count + cost >= FW_SCALE then return stored, count, FW_SET end
  return stored, count, FW_KEPT
end
-- allowed, remaining, reset_ms, retry_ms of a request of cost on `count` units counted in window `index`
local function fw_decide(limit, window, index, count, now, cost)
  return period_decide(count, (index + 1) * window - now, limit, cost)
end
-- an allowed request's write: INCRBY of its cost field (arg, which Redis reads without a Lua number's
-- formatting) where the key is kept, else (or where Redis does not take the value read as an integer) a SET
local function fw_lean_write(key, index, n, how, reset, slack, arg)
  if how == FW_KEPT and type(redis.pcall('INCRBY', key, arg)) == 'number' then return end
  redis.call('SET', key, fw_int_encode(index, n), 'PX', max(max(reset, 0) + slack, 1))
end
local function make_FW()
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
  return FW
end
local function make_FWF()
  local FWF = { decode = period_decode, encode = period_encode }
  local function fwf_start(st, window, now)
    if st and st[1] + window > now then return st[1] end
    return now
  end
  function FWF.step(st, limit, window, cap, now, cost)
    local start = fwf_start(st, window, now)
    return period_step(st, start, start + window - now, limit, cost)
  end
  function FWF.refund(st, limit, window, cap, now, amount) return period_refund(st, fwf_start(st, window, now), amount) end
  function FWF.charge(st, limit, window, cap, now, amount) return period_charge(st, fwf_start(st, window, now), amount) end
  return FWF
end
