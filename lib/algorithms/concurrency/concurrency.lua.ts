/**
 * Lua twin of concurrency.ts: the sliding window log's step, and a refund that gives back the oldest leases
 * first. State as the log's.
 */
export const concurrencyLua = `
local CONC = make_SWL()
function CONC.refund(st, limit, w, cap, now, amount)
  local times, costs = CONC.alive(st, w, CONC.key_time(st, now))
  local left = amount
  local i = 1
  while i <= #times and left > 0 do
    local take = min(costs[i], left)
    costs[i] = costs[i] - take
    left = left - take
    i = i + 1
  end
  local kept_t, kept_c = {}, {}
  for j = 1, #times do
    if costs[j] > 0 then
      kept_t[#kept_t + 1] = times[j]
      kept_c[#kept_c + 1] = costs[j]
    end
  end
  if #kept_t > 0 then return { kept_t, kept_c } end
  return false
end
`;
