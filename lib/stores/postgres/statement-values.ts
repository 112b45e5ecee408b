import { elementAt } from '../../util/element-at.js';
import { ITEM_COLUMNS, type ItemColumns } from './item-columns.js';

/** One request's consume as a statement carries it. */
export interface Consume {
  readonly columns: ItemColumns;
  /** ms since the epoch, or null for the database's clock */
  readonly now: number | null;
}

/**
 * The batch in rounds: a request goes one round after the last earlier request that shares a key with it, so
 * a round holds each key once and rounds run in order. Returns the requests ordered by round, and the 1-based
 * number of the first request of each round.
 */
export function inRounds<T extends Consume>(batch: T[]): { ordered: T[]; rounds: number[] } {
  if (batch.length === 1) return { ordered: batch, rounds: [1] };
  const roundOfKey = new Map<string, number>();
  const byRound: T[][] = [];
  for (const waiting of batch) {
    let round = 0;
    for (const key of waiting.columns.keys) round = Math.max(round, roundOfKey.get(key) ?? 0);
    for (const key of waiting.columns.keys) roundOfKey.set(key, round + 1);
    (byRound[round] ??= []).push(waiting);
  }
  const rounds: number[] = [];
  let first = 1;
  for (const requests of byRound) {
    rounds.push(first);
    first += requests.length;
  }
  return { ordered: byRound.flat(), rounds };
}

/** The values of one rate_limit_consume call, in the order of its parameters. */
export function statementValues(ordered: readonly Consume[], rounds: number[], slackMs: number): unknown[] {
  const nows: (number | null)[] = [];
  const reqs: number[] = [];
  // each of ITEM_COLUMNS, the requests' columns one after the other
  const concatenated = ITEM_COLUMNS.map((): (string | number)[] => []);
  // the arrays of shadows and blocks only when an item of the statement has one (most have none)
  const shadows = ordered.some(({ columns }) => columns.shadows !== null) ? ([] as boolean[]) : null;
  const blocks = ordered.some(({ columns }) => columns.blocks !== null) ? ([] as number[]) : null;
  ordered.forEach(({ columns, now }, r) => {
    ITEM_COLUMNS.forEach((name, c) => {
      const column: readonly (string | number)[] = columns[name];
      // itemColumns fills every column with one entry per item: a shorter one is a defect, said as elementAt says it
      if (column.length < columns.keys.length) elementAt(column, column.length, `the ${name} column`);
      elementAt(concatenated, c, 'a column').push(...column);
    });
    for (let i = 0; i < columns.keys.length; i++) {
      nows.push(now);
      reqs.push(r + 1);
      shadows?.push(columns.shadows?.[i] ?? false);
      blocks?.push(columns.blocks?.[i] ?? 0);
    }
  });
  const storeClock = elementAt(ordered, 0, 'a batch of consumes').now === null;
  const algos = elementAt(concatenated, ITEM_COLUMNS.indexOf('algos'), 'the algos column');
  const [first] = algos;
  const algo = first !== undefined && algos.every((a) => a === first) ? first : 0;
  const single = reqs.length === ordered.length;
  const repeated = ordered.some(({ columns: { keys } }) => keys.length > 1 && new Set(keys).size < keys.length);
  return [slackMs, single, algo, storeClock ? null : nows, rounds, reqs, ...concatenated, shadows, blocks, repeated];
}
