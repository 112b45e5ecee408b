import { ALGORITHM_CODES } from '../../algorithms/index.js';
import { NEVER_FITS, REPLY_WIDTH as W } from '../protocol.js';
import { ALLOWED, BLOCKED, DENIED } from './reply.sql.js';

/**
 * rate_limit(op, ...), every operation but a consume (rate_limit_consume, consume.sql.ts): peek, refund,
 * charge, reset, block and unblock, item by item in PL/pgSQL, through the algorithms' SQL twins and
 * state-rows.sql.ts.
 */
export const operationsSql = (S: string): string => `
-- The Postgres twin of the Redis script's dispatcher for what is not a consume: one call for every item of a
-- request.
--   op       'peek' | 'refund' | 'charge' | 'reset' | 'block' | 'unblock'
--   now_in   current time in ms since the epoch, or NULL to take the database's clock
--   slack    ms added to every row's expiry
--   keys, algos, lims, ws, caps, costs: per item, as in the Redis script ('block': the block's length in ms
--            as the cost; 'charge': 0 for an item not to charge, a shadow item)
-- Returns ${W} bigints per item: allowed (${DENIED}/${ALLOWED}, ${BLOCKED}: denied and blocked), remaining, reset_ms, retry_ms
-- (${NEVER_FITS}: the cost can never fit); 'refund' and 'charge' as a peek of each key afterwards; the others none.
-- Per-key transaction-level advisory locks, taken in key order, make each call atomic under concurrency.
CREATE OR REPLACE FUNCTION ${S}.rate_limit(op text, now_in bigint, slack bigint, keys text[], algos int[],
  lims bigint[], ws bigint[], caps bigint[], costs bigint[]) RETURNS bigint[]
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  now_ms bigint := coalesce(now_in, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint);
  n int := coalesce(array_length(keys, 1), 0);
  original text[];
  untils bigint[];
  working text[];
  st text;
  r record;
  l record;
  first int;
  res bigint[] := '{}';
BEGIN
  IF op = 'reset' THEN
    PERFORM ${S}.rl_forget(keys, algos, ws);
    RETURN res;
  END IF;
  IF op = 'charge' AND ${ALGORITHM_CODES.concurrency} = ANY(algos) THEN
    RAISE EXCEPTION 'nest-rate-limit: a concurrency limit cannot be charged';
  END IF;
  IF n = 1 THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(keys[1], 0));
  ELSE
    PERFORM pg_advisory_xact_lock(hashtextextended(u, 0)) FROM unnest(keys) AS u ORDER BY u;
  END IF;
  -- the first item of each key reads it; later items of the same key share that state, block and period
  original := array_fill(NULL::text, ARRAY[n]);
  untils := array_fill(0::bigint, ARRAY[n]);
  FOR i IN 1..n LOOP
    first := i;
    FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] THEN first := j; EXIT; END IF; END LOOP;
    IF first = i THEN
      l := ${S}.rl_load_state(keys[i], algos[i], ws[i], caps[i], now_ms);
      original[i] := l.st; untils[i] := l.until_ms; ws[i] := l.w_ms; caps[i] := l.cap_ms;
    ELSE
      original[i] := original[first]; untils[i] := untils[first];
      IF algos[i] = ${ALGORITHM_CODES.quota} THEN ws[i] := ws[first]; caps[i] := caps[first]; END IF;
    END IF;
  END LOOP;

  IF op = 'peek' THEN
    FOR i IN 1..n LOOP
      res := res || ${S}.rl_standing(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, untils[i]);
    END LOOP;
    RETURN res;
  END IF;

  -- block: until now + the item's cost (ms), the state kept; unblock: the state kept, without its block
  IF op = 'block' OR op = 'unblock' THEN
    FOR i IN 1..n LOOP
      SELECT * INTO r FROM ${S}.rl_algo_decision(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      PERFORM ${S}.rl_save_state(algos[i], keys[i], original[i], r.reset_ms, slack, now_ms, lims[i], ws[i], caps[i],
        CASE WHEN op = 'block' THEN now_ms + costs[i] ELSE 0 END);
    END LOOP;
    RETURN res;
  END IF;

  IF op <> 'refund' AND op <> 'charge' THEN
    RAISE EXCEPTION 'nest-rate-limit: rate_limit() has no operation %', op;
  END IF;
  -- refund, or charge: each item's cost given back or taken without deciding (counted even past the limit, a
  -- debt later consumes wait out; a charge of 0 takes nothing), on the state the items of its key before it
  -- left; a block stays as it is (the units charged count once it ends)
  working := original;
  FOR i IN 1..n LOOP
    st := working[i];
    FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] THEN st := working[j]; END IF; END LOOP;
    IF op = 'refund' THEN
      SELECT x.new_st INTO st FROM ${S}.rl_algo_refunded(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]) x;
    ELSIF costs[i] > 0 THEN
      SELECT x.new_st INTO st FROM ${S}.rl_algo_charged(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]) x;
    END IF;
    working[i] := st;
    SELECT * INTO r FROM ${S}.rl_algo_decision(algos[i], st, lims[i], ws[i], caps[i], now_ms, 0);
    PERFORM ${S}.rl_save_state(algos[i], keys[i], st, r.reset_ms, slack, now_ms, lims[i], ws[i], caps[i], untils[i]);
    res := res || ${S}.rl_standing(algos[i], st, lims[i], ws[i], caps[i], now_ms, untils[i]);
  END LOOP;
  RETURN res;
END $fn$;
`;
