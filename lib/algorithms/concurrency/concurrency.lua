-- requires: make_SWL
-- provides: make_CONC
-- Lua twin of concurrency.ts: the sliding window log's step, and a refund that gives back the oldest slots
-- first. State as the log's.
local function make_CONC()
  local CONC = make_SWL()
  function CONC.refund(st, limit, w, cap, now, amount) return CONC.refund_from(st, w, now, amount, true) end
  -- not the log's: a concurrency limit cannot be charged (concurrency.ts' notChargeable), which the dispatcher refuses
  CONC.charge = nil
  return CONC
end
