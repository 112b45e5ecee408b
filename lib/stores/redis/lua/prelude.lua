-- The locals every other file uses: math's, and integers formatted and divided as the twins need them.
-- requires: (nothing)
-- provides: floor, min, max, fmt, ceil_div, spread
local floor, min, max = math.floor, math.min, math.max
-- Lua's unpack (state-codec.lua's `unpack` is struct's): the values of a list, as a command's arguments
local spread = unpack
local function fmt(n) return string.format('%d', n) end
local function ceil_div(a, b)
  local q = floor(a / b)
  if q * b < a then q = q + 1 end
  return q
end
