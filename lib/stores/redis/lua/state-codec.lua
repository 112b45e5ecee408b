-- requires: floor, fmt
-- provides: byte, pair_encode, pair_decode, triple_encode, triple_decode, rated_encode, rated_decode,
--   planned_encode, planned_decode, log_encode, log_decode
-- How the Lua twins store their states. Redis keeps a string of at most 12 bytes in its smallest allocation:
-- 88 bytes per key (MEMORY USAGE), 104 from 13 bytes on. A state is packed into big-endian integers of 6 (and
-- 3 or 5) bytes when its numbers fit — a millisecond timestamp alone has 13 digits as text, and packing costs
-- Redis less than formatting the numbers — else kept as text (which is also read). The first number of a packed
-- state is in [0, 2^45), so its first byte is below 32, while text starts with a digit or '-': a decoder tells
-- the two apart by that byte.
--
-- pair_encode(a, b) / pair_decode(raw) -> a, b     "<a>:<b>" or 12 bytes (6 + 6)
-- triple_encode(a, b, c) / triple_decode(raw)      "<a>:<b>:<c>" or 12 bytes (6 + 3 + 3), b and c >= 0
-- rated_encode(a, b, r) / rated_decode(raw)        "<a>:<b>:<r>" or 12 bytes: 128 + k (r < 2^k), a in 6 bytes,
--                                                  then b·2^k + r in 5; b >= 0, r >= 1. rated_decode also
--                                                  reads a pair, with r nil: its first byte tells them apart
-- log_encode(times, costs) / log_decode(raw)       "<t>:<c>,<t>:<c>,..." or 12 bytes per entry
-- planned_encode(a, r) / planned_decode(raw)       "<a>/<r>" or 12 bytes: 64 + floor(a / 2^48), a mod 2^48
--                                                  in 6, r in 5; 0 <= a < 2^53, 1 <= r < 2^40. Its first
--                                                  byte (64 to 95 packed) or its '/' tells it from the others
-- A lone integer (GCRA's TAT) is stored as its decimal text, which Redis keeps as an integer object: no state
-- is smaller (MEMORY USAGE 16 bytes below a 12-byte string).
local PACKABLE, I6, U3, U5 = 2 ^ 45, 2 ^ 47, 2 ^ 23, 2 ^ 40
local pack, unpack, byte = struct.pack, struct.unpack, string.byte
local function packable(a) return a >= 0 and a < PACKABLE end
local function fits6(b) return b >= -I6 and b < I6 end
local function is_packed(raw) return byte(raw, 1) < 32 end
local function pair_encode(a, b)
  if packable(a) and fits6(b) then return pack('>i6i6', a, b) end
  return fmt(a) .. ':' .. fmt(b)
end
local function pair_decode(raw)
  if is_packed(raw) then
    if #raw ~= 12 then return nil end
    local a, b = unpack('>i6i6', raw)
    return a, b
  end
  local a, b = string.match(raw, '^(%-?%d+):(%-?%d+)$')
  if not a then return nil end
  return tonumber(a), tonumber(b)
end
local function triple_encode(a, b, c)
  if packable(a) and b >= 0 and b < U3 and c >= 0 and c < U3 then return pack('>i6i3i3', a, b, c) end
  return fmt(a) .. ':' .. fmt(b) .. ':' .. fmt(c)
end
local function triple_decode(raw)
  if is_packed(raw) then
    if #raw ~= 12 then return nil end
    local a, b, c = unpack('>i6i3i3', raw)
    return a, b, c
  end
  local a, b, c = string.match(raw, '^(%-?%d+):(%d+):(%d+)$')
  if not a then return nil end
  return tonumber(a), tonumber(b), tonumber(c)
end
local function rated_encode(a, b, r)
  if fits6(a) and r < U5 then
    local _, k = math.frexp(r)
    local scale = 2 ^ k
    if b < U5 / scale then return pack('>Bi6I5', 128 + k, a, b * scale + r) end
  end
  return fmt(a) .. ':' .. fmt(b) .. ':' .. fmt(r)
end
local function rated_decode(raw)
  local first = byte(raw, 1)
  if first == nil then return nil end
  if first >= 128 then
    if #raw ~= 12 then return nil end
    local _, a, v = unpack('>Bi6I5', raw)
    local scale = 2 ^ (first - 128)
    local r = v % scale
    return a, (v - r) / scale, r
  end
  if first >= 32 then
    local a, b, r = string.match(raw, '^(%-?%d+):(%d+):(%d+)$')
    if a then return tonumber(a), tonumber(b), tonumber(r) end
  end
  return pair_decode(raw)
end
local PLANNED_HIGH = 2 ^ 48
local function planned_encode(a, r)
  if a >= 0 and a < 2 ^ 53 and r >= 1 and r < U5 then
    local high = floor(a / PLANNED_HIGH)
    return pack('>BI6I5', 64 + high, a - high * PLANNED_HIGH, r)
  end
  return fmt(a) .. '/' .. fmt(r)
end
local function planned_decode(raw)
  local first = byte(raw, 1)
  if first == nil then return nil end
  if first >= 64 and first < 96 then
    if #raw ~= 12 then return nil end
    local high, low, r = unpack('>BI6I5', raw)
    return (high - 64) * PLANNED_HIGH + low, r
  end
  local a, r = string.match(raw, '^(%-?%d+)/(%d+)$')
  if not a then return nil end
  return tonumber(a), tonumber(r)
end
local function log_encode(times, costs)
  local parts, packed = {}, true
  for i = 1, #times do
    if not (packable(times[i]) and fits6(costs[i])) then packed = false end
  end
  for i = 1, #times do
    if packed then
      parts[i] = pack('>i6i6', times[i], costs[i])
    else
      parts[i] = fmt(times[i]) .. ':' .. fmt(costs[i])
    end
  end
  if packed then return table.concat(parts) end
  return table.concat(parts, ',')
end
local function log_decode(raw)
  local times, costs = {}, {}
  if is_packed(raw) then
    for at = 1, #raw - 11, 12 do
      local t, c = unpack('>i6i6', raw, at)
      times[#times + 1] = t
      costs[#costs + 1] = c
    end
  else
    for t, c in string.gmatch(raw, '(%-?%d+):(%d+)') do
      times[#times + 1] = tonumber(t)
      costs[#costs + 1] = tonumber(c)
    end
  end
  return times, costs
end
