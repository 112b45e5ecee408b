/**
 * Lua twin of quota.ts: the period counter with the period's start as its key. Lua knows no time zones, so the
 * caller passes the period: window_ms carries its start and capacity its end (both in ms since the epoch).
 * State string: "<period start ms>:<used>".
 */
export const quotaLua = `
local QUOTA = { decode = period_decode, encode = period_encode }
function QUOTA.step(st, limit, start, finish, now, cost)
  return period_step(st, start, finish - now, limit, cost)
end
function QUOTA.refund(st, limit, start, finish, now, amount)
  return period_refund(st, start, amount)
end
`;
