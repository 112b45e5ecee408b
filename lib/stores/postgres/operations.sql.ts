import { ALGORITHM_CODES } from '../../algorithms/index.js';
import { NEVER_FITS, REPLY_WIDTH as W } from '../protocol.js';
import { CONSUME_ITEMS_VARIABLES, consumeItemsSql } from './consume-items.sql.js';
import { ALLOWED, BLOCKED, DENIED } from './reply.sql.js';

/**
 * The general entry point, rate_limit_v4(op, ...): peek, refund, reset, block and unblock, and the consumes
 * that rate_limit_consume_v4 does not take (a request with two items on one key, which decide one after the
 * other; consume-items.sql.ts). Item by item in PL/pgSQL, through the algorithms' SQL twins and
 * state-rows.sql.ts. rate_limit_v3(...), rate_limit_v2(...) and rate_limit(...), the entry points of the earlier
 * schemas (same signatures), stay as its wrappers: an instance of an earlier version goes on deciding through
 * it, with this version's twins.
 */
export const operationsSql = (S: string): string => `
-- The Postgres twin of the Redis script's dispatcher: one call decides every item of a request.
--   op       'consume' | 'peek' | 'refund' | 'reset' | 'block' | 'unblock'
--   now_in   current time in ms since the epoch, or NULL to take the database's clock
--   slack    ms added to every row's expiry
--   keys, algos, lims, ws, caps, costs: per item, as in the Redis script ('block': the block's length in ms
--            as the cost)
--   shadows  per item, whether it is a shadow item (consume only; NULL: none is)
--   blocks   per item, the block in ms that a denial of it starts (consume only; NULL or 0: none)
-- Returns ${W} bigints per item: allowed (${DENIED}/${ALLOWED}, ${BLOCKED}: denied and blocked), remaining, reset_ms, retry_ms
-- (${NEVER_FITS}: the cost can never fit). Per-key transaction-level advisory locks, taken in key order, make each call atomic under
-- concurrency.
CREATE OR REPLACE FUNCTION ${S}.rate_limit_v4(op text, now_in bigint, slack bigint, keys text[], algos int[],
  lims bigint[], ws bigint[], caps bigint[], costs bigint[], shadows boolean[], blocks bigint[]) RETURNS bigint[]
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
  ${CONSUME_ITEMS_VARIABLES}
BEGIN
  IF op = 'reset' THEN
    PERFORM ${S}.rl_forget(keys, algos, ws);
    RETURN res;
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
      res := res || ${S}.rl_standing_v4(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, untils[i]);
    END LOOP;
    RETURN res;
  END IF;

  -- block: until now + the item's cost (ms), the state kept; unblock: the state kept, without its block
  IF op = 'block' OR op = 'unblock' THEN
    FOR i IN 1..n LOOP
      SELECT * INTO r FROM ${S}.rl_algo_decision_v4(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      PERFORM ${S}.rl_save_state(algos[i], keys[i], original[i], r.reset_ms, slack, now_ms, lims[i], ws[i], caps[i],
        CASE WHEN op = 'block' THEN now_ms + costs[i] ELSE 0 END);
    END LOOP;
    RETURN res;
  END IF;

  IF op = 'refund' THEN
    -- a block stays as it is
    working := original;
    FOR i IN 1..n LOOP
      st := working[i];
      FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] THEN st := working[j]; END IF; END LOOP;
      SELECT x.new_st INTO st FROM ${S}.rl_algo_refunded_v4(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]) x;
      working[i] := st;
      SELECT * INTO r FROM ${S}.rl_algo_decision_v4(algos[i], st, lims[i], ws[i], caps[i], now_ms, 0);
      PERFORM ${S}.rl_save_state(algos[i], keys[i], st, r.reset_ms, slack, now_ms, lims[i], ws[i], caps[i], untils[i]);
      res := res || ${S}.rl_standing_v4(algos[i], st, lims[i], ws[i], caps[i], now_ms, untils[i]);
    END LOOP;
    RETURN res;
  END IF;

  -- consume${consumeItemsSql(S)}
END $fn$;

-- Takes each item's cost without deciding (RateLimitStore.charge): counted even past the limit, a debt later
-- consumes wait out; returns ${W} bigints per item, as a peek (rl_standing_v4) of the key afterwards. A block
-- stays (the units charged count once it ends); a shadow item, or a cost of 0, is not charged; a concurrency
-- limit cannot be charged (refused: no twin charges slots). Same parameters as rate_limit_v4 without op and
-- blocks. A function of its own rather than an op of rate_limit_v4: an instance of an earlier version that
-- migrates again during a rolling deploy recreates rate_limit_v4 as it knew it, which would decide a 'charge'
-- as a consume; it leaves a function it never knew alone.
CREATE OR REPLACE FUNCTION ${S}.rate_limit_charge_v4(now_in bigint, slack bigint, keys text[], algos int[],
  lims bigint[], ws bigint[], caps bigint[], costs bigint[], shadows boolean[]) RETURNS bigint[]
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  now_ms bigint := coalesce(now_in, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint);
  n int := coalesce(array_length(keys, 1), 0);
  working text[];
  untils bigint[];
  st text;
  l record;
  r record;
  first int;
  res bigint[] := '{}';
BEGIN
  IF ${ALGORITHM_CODES.concurrency} = ANY(algos) THEN
    RAISE EXCEPTION 'nest-rate-limit: a concurrency limit cannot be charged';
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended(u, 0)) FROM unnest(keys) AS u ORDER BY u;
  working := array_fill(NULL::text, ARRAY[n]);
  untils := array_fill(0::bigint, ARRAY[n]);
  FOR i IN 1..n LOOP
    -- the first item of a key reads it; later items of the same key take the state the ones before left
    first := i;
    FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] THEN first := j; EXIT; END IF; END LOOP;
    IF first = i THEN
      l := ${S}.rl_load_state(keys[i], algos[i], ws[i], caps[i], now_ms);
      st := l.st; untils[i] := l.until_ms; ws[i] := l.w_ms; caps[i] := l.cap_ms;
    ELSE
      st := working[first]; untils[i] := untils[first];
      IF algos[i] = ${ALGORITHM_CODES.quota} THEN ws[i] := ws[first]; caps[i] := caps[first]; END IF;
    END IF;
    IF costs[i] > 0 AND NOT coalesce(shadows[i], false) THEN
      SELECT x.new_st INTO st FROM ${S}.rl_algo_charged_v4(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]) x;
    END IF;
    working[first] := st;
    SELECT * INTO r FROM ${S}.rl_algo_decision_v4(algos[i], st, lims[i], ws[i], caps[i], now_ms, 0);
    PERFORM ${S}.rl_save_state(algos[i], keys[i], st, r.reset_ms, slack, now_ms, lims[i], ws[i], caps[i], untils[i]);
    res := res || ${S}.rl_standing_v4(algos[i], st, lims[i], ws[i], caps[i], now_ms, untils[i]);
  END LOOP;
  RETURN res;
END $fn$;

-- The entry points of the earlier schemas, for their instances during a rolling deploy.
CREATE OR REPLACE FUNCTION ${S}.rate_limit_v3(op text, now_in bigint, slack bigint, keys text[], algos int[],
  lims bigint[], ws bigint[], caps bigint[], costs bigint[], shadows boolean[], blocks bigint[]) RETURNS bigint[]
LANGUAGE sql AS $fn$
  SELECT ${S}.rate_limit_v4(op, now_in, slack, keys, algos, lims, ws, caps, costs, shadows, blocks)
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rate_limit_v2(op text, now_in bigint, slack bigint, keys text[], algos int[],
  lims bigint[], ws bigint[], caps bigint[], costs bigint[], shadows boolean[], blocks bigint[]) RETURNS bigint[]
LANGUAGE sql AS $fn$
  SELECT ${S}.rate_limit_v4(op, now_in, slack, keys, algos, lims, ws, caps, costs, shadows, blocks)
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rate_limit(op text, now_in bigint, slack bigint, keys text[], algos int[],
  lims bigint[], ws bigint[], caps bigint[], costs bigint[]) RETURNS bigint[]
LANGUAGE sql AS $fn$
  SELECT ${S}.rate_limit_v4(op, now_in, slack, keys, algos, lims, ws, caps, costs, NULL, NULL)
$fn$;
`;
