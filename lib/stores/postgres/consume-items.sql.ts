import { REPLY_WIDTH as W } from '../protocol.js';
import {
  consumesSql,
  itemReplySql,
  letsThroughSql,
  passesSql,
  startsBlockSql,
  type ConsumedItem,
} from './all-or-nothing.sql.js';
import { type ReplySql, replyArray, standingReply } from './reply.sql.js';

/** Item i's decision, as consumeItemsSql keeps it in `decided` (W values per item). */
const decisionAt = (i: string): ReplySql => [
  `decided[(${i} - 1) * ${W} + 1]`,
  `decided[(${i} - 1) * ${W} + 2]`,
  `decided[(${i} - 1) * ${W} + 3]`,
  `decided[(${i} - 1) * ${W} + 4]`,
];

/** Item i of rate_limit_v4's arrays, for the rule of all-or-nothing.sql.ts. */
const ITEM: ConsumedItem = {
  allowed: decisionAt('i')[0],
  until: 'untils[i]',
  now: 'now_ms',
  shadow: 'coalesce(shadows[i], false)',
  block: 'coalesce(blocks[i], 0)',
};

/** The variables consumeItemsSql uses beyond those of rate_limit_v4's other operations. */
export const CONSUME_ITEMS_VARIABLES = `known boolean[];
  new_states text[];
  decided bigint[];
  passes boolean;
  block_ms bigint;
  standing_remaining bigint;
  standing_reset bigint;
  all_allowed boolean := true;`;

/**
 * The consume of rate_limit_v4, item by item, for the requests that the consume statement does not take (two
 * items on one key) and for the earlier versions' entry points: items on one key decide one after the other,
 * each on the state that the allowed items before it left (consumeAll in consume-all.ts); then the rule of
 * all-or-nothing.sql.ts, the consume statement's, says what each item writes and replies. It runs where
 * rate_limit_v4 has read every key: `original`, `untils`, `ws` and `caps` per item, `res` empty.
 */
export const consumeItemsSql = (S: string): string => `
  working := original;
  known := array_fill(false, ARRAY[n]);
  new_states := array_fill(NULL::text, ARRAY[n]);
  decided := array_fill(0::bigint, ARRAY[n * ${W}]);
  FOR i IN 1..n LOOP
    -- a blocked key is denied without a decision
    IF untils[i] <= now_ms THEN
      st := original[i];
      FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] AND known[j] THEN st := working[j]; END IF; END LOOP;
      SELECT * INTO r FROM ${S}.rl_algo_decision_v4(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]);
      new_states[i] := r.new_st;
      decided[(i - 1) * ${W} + 1:i * ${W}] := ARRAY[r.allowed, r.remaining, r.reset_ms, r.retry_ms];
      -- the later items of the key see this one's state, if it consumes
      IF ${passesSql(ITEM)} AND costs[i] > 0 THEN
        working[i] := r.new_st; known[i] := true;
        FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] THEN known[j] := false; END IF; END LOOP;
      END IF;
    END IF;
    all_allowed := all_allowed AND ${letsThroughSql(ITEM)};
  END LOOP;
  FOR i IN 1..n LOOP
    passes := ${passesSql(ITEM)};
    block_ms := ${startsBlockSql(ITEM)};
    IF block_ms > 0 THEN
      PERFORM ${S}.rl_save_state(algos[i], keys[i], original[i], ${decisionAt('i')[2]}, slack, now_ms, lims[i], ws[i],
        caps[i], now_ms + block_ms);
    END IF;
    IF NOT all_allowed AND passes THEN
      SELECT x.remaining, x.reset_ms INTO standing_remaining, standing_reset
        FROM ${S}.rl_algo_decision_v4(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0) x;
    END IF;
    res := res || ${itemReplySql(
      ITEM,
      { blocks: 'block_ms', requestAllowed: 'all_allowed', passes: 'passes' },
      decisionAt('i'),
      standingReply('standing_remaining', 'standing_reset'),
      replyArray,
    )};
    -- of the items of a key that consume, the last one holds the key's new state (known)
    IF ${consumesSql('all_allowed', 'passes', 'costs[i]')} AND known[i] THEN
      PERFORM ${S}.rl_save_state(algos[i], keys[i], new_states[i], ${decisionAt('i')[2]}, slack, now_ms, lims[i], ws[i],
        caps[i], 0);
    END IF;
  END LOOP;
  RETURN res;`;
