import { elementAt } from '../../element-at.js';
import { RateLimitStoreTimeoutError, withTimeout } from '../../engine/circuit-breaker.js';
import type { RateLimitStoreCall } from '../rate-limit-store.js';
import type { ItemColumns } from './item-columns.js';

interface Waiting {
  readonly columns: ItemColumns;
  /** ms since the epoch, or null for the database's clock */
  readonly now: number | null;
  /** The module's timeout of this consume: it waits while the consume is queued, and counts once it is sent. */
  readonly call: RateLimitStoreCall | undefined;
  resolve(values: string[]): void;
  reject(error: unknown): void;
}

/** A statement in flight: the keys it holds, and whether it has been out for longer than queueTimeoutMs. */
interface Statement {
  readonly keys: ReadonlySet<string>;
  overdue: boolean;
}

/** Requests per statement at most (the arrays of a statement stay small; a busy store sends several). */
const MAX_REQUESTS = 64;

/**
 * Sends consumes to rate_limit_consume_v3, gathering the requests that arrive while `parallel` statements are
 * busy into the next statement: a request alone is sent at once, and under load one statement (one round trip,
 * one transaction) decides many. Each request stays all-or-nothing and is decided in arrival order with the
 * requests that share a key with it: in one statement by rounds (see consume.sql.ts); across statements by
 * holding a request back while a statement in flight has one of its keys (two statements on one key could take
 * its lock in either order).
 *
 * The module's timeout of a request counts from when its statement is sent (RateLimitStoreCall): time in the
 * queue is not the store's alone, since an app busy with its own traffic reads the replies that let the queue
 * move late. A waiting request is refused, and never sent, when what it waits for has stopped: every statement
 * in flight (for a request that waits for one to end), or the statement holding one of its keys, has been out
 * for longer than `queueTimeoutMs` of the store's time (counted as the module counts its timeout, withTimeout);
 * and at once when `maxQueued` requests wait already (the database has fallen behind what this instance asks
 * of it). `execute` runs one statement with its values.
 */
export class ConsumeBatcher {
  private queue: Waiting[] = [];
  private scheduled = false;
  private readonly inFlight = new Set<Statement>();
  /** The keys of the statements in flight, with how many of them hold each. */
  private readonly keysInFlight = new Map<string, number>();

  constructor(
    private readonly execute: (values: unknown[]) => Promise<string | null>,
    private readonly slackMs: number,
    private readonly parallel: number,
    private readonly queueTimeoutMs: number,
    private readonly maxQueued: number,
  ) {}

  /** The reply values of one request: 4 per item (allowed 0/1/2, remaining, reset_ms, retry_ms), as strings. */
  consume(columns: ItemColumns, now: number | null, call?: RateLimitStoreCall): Promise<string[]> {
    if (this.queue.length >= this.maxQueued) {
      return Promise.reject(
        new Error(
          `nest-rate-limit: ${this.maxQueued} PostgreSQL consumes wait for a statement already (maxQueued): the database has fallen behind`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      call?.queued();
      this.queue.push({ columns, now, call, resolve, reject });
      if (!this.scheduled) {
        // the requests of this turn of the event loop go out together
        this.scheduled = true;
        queueMicrotask(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    while (this.inFlight.size < this.parallel && this.queue.length > 0) {
      const size = Math.min(MAX_REQUESTS, Math.ceil(this.queue.length / (this.parallel - this.inFlight.size)));
      const batch = this.keysInFlight.size === 0 ? this.queue.splice(0, size) : this.takeFree(size);
      // Everything waiting shares a key with a statement in flight: the next flush is when one ends.
      if (batch.length === 0) break;
      this.send(batch);
    }
    // what came while a statement it waits for is overdue waits no longer
    if (this.queue.length > 0 && [...this.inFlight].some((statement) => statement.overdue)) this.refuseStuck();
  }

  /**
   * Refuses the waiting requests whose statements have stopped: all of them when every statement in flight is
   * overdue (no slot frees in time), else those that share a key with an overdue statement.
   */
  private refuseStuck(): void {
    const overdueKeys = new Set<string>();
    let allOverdue = this.inFlight.size >= this.parallel;
    for (const statement of this.inFlight) {
      if (statement.overdue) for (const key of statement.keys) overdueKeys.add(key);
      else allOverdue = false;
    }
    const stuck = (waiting: Waiting) => allOverdue || waiting.columns.keys.some((key) => overdueKeys.has(key));
    const refused = this.queue.filter(stuck);
    if (refused.length === 0) return;
    this.queue = this.queue.filter((waiting) => !stuck(waiting));
    const error = new Error(
      `nest-rate-limit: a PostgreSQL consume waited for a statement out for more than ${this.queueTimeoutMs} ms (queueTimeoutMs)`,
    );
    for (const waiting of refused) waiting.reject(error);
  }

  /**
   * Up to `size` waiting requests, first come first, that share no key with a statement in flight nor with a
   * request held back before them; the others stay queued in their order.
   */
  private takeFree(size: number): Waiting[] {
    const taken: Waiting[] = [];
    const held: Waiting[] = [];
    const heldKeys = new Set<string>();
    for (const waiting of this.queue) {
      const { keys } = waiting.columns;
      if (taken.length < size && !keys.some((key) => this.keysInFlight.has(key) || heldKeys.has(key))) {
        taken.push(waiting);
        continue;
      }
      held.push(waiting);
      for (const key of keys) heldKeys.add(key);
    }
    this.queue = held;
    return taken;
  }

  private send(batch: Waiting[]): void {
    let ordered: Waiting[];
    let values: unknown[];
    try {
      let rounds: number[];
      ({ ordered, rounds } = inRounds(batch));
      values = statementValues(ordered, rounds, this.slackMs);
    } catch (error) {
      // A bug in the columns: these requests fail, and nothing is held for them.
      batch.forEach((waiting) => waiting.reject(error));
      return;
    }
    const statement: Statement = { keys: new Set(batch.flatMap(({ columns }) => columns.keys)), overdue: false };
    this.inFlight.add(statement);
    this.holdKeys(batch, +1);
    for (const waiting of batch) waiting.call?.sent();
    const running = this.execute(values);
    // Overdue as the module's timeout counts it: the requests waiting for this statement may then be refused.
    withTimeout(() => running, this.queueTimeoutMs).catch((error: unknown) => {
      if (!(error instanceof RateLimitStoreTimeoutError) || !this.inFlight.has(statement)) return;
      statement.overdue = true;
      this.refuseStuck();
      this.flush();
    });
    running
      .then(
        (reply) => {
          const all = reply === null ? [] : reply.split(',');
          let at = 0;
          for (const waiting of ordered) {
            const end = at + waiting.columns.keys.length * 4;
            waiting.resolve(all.slice(at, end));
            at = end;
          }
        },
        (error: unknown) => ordered.forEach((waiting) => waiting.reject(error)),
      )
      .finally(() => {
        this.inFlight.delete(statement);
        this.holdKeys(batch, -1);
        this.flush();
      });
  }

  /** Counts the keys of a statement as in flight (+1) when it is sent, and no more (-1) when it has ended. */
  private holdKeys(batch: readonly Waiting[], delta: 1 | -1): void {
    for (const { columns } of batch) {
      for (const key of columns.keys) {
        const holding = (this.keysInFlight.get(key) ?? 0) + delta;
        if (holding <= 0) this.keysInFlight.delete(key);
        else this.keysInFlight.set(key, holding);
      }
    }
  }
}

/**
 * The batch in rounds: a request goes one round after the last earlier request that shares a key with it, so
 * a round holds each key once and rounds run in order. Returns the requests ordered by round, and the 1-based
 * number of the first request of each round.
 */
function inRounds(batch: Waiting[]): { ordered: Waiting[]; rounds: number[] } {
  if (batch.length === 1) return { ordered: batch, rounds: [1] };
  const roundOfKey = new Map<string, number>();
  const byRound: Waiting[][] = [];
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

/** The values of one rate_limit_consume_v3 call, in the order of its parameters. */
function statementValues(ordered: Waiting[], rounds: number[], slackMs: number): unknown[] {
  const nows: (number | null)[] = [];
  const reqs: number[] = [];
  const keys: string[] = [];
  const algos: number[] = [];
  const limits: number[] = [];
  const windows: number[] = [];
  const capacities: number[] = [];
  const costs: number[] = [];
  // the arrays of shadows and blocks only when an item of the statement has one (most have none)
  const shadows = ordered.some(({ columns }) => columns.shadows !== null) ? ([] as boolean[]) : null;
  const blocks = ordered.some(({ columns }) => columns.blocks !== null) ? ([] as number[]) : null;
  ordered.forEach(({ columns, now }, r) => {
    for (let i = 0; i < columns.keys.length; i++) {
      nows.push(now);
      reqs.push(r + 1);
      // itemColumns fills every column with one entry per item
      keys.push(elementAt(columns.keys, i, 'the keys column'));
      algos.push(elementAt(columns.algos, i, 'the algos column'));
      limits.push(elementAt(columns.limits, i, 'the limits column'));
      windows.push(elementAt(columns.windows, i, 'the windows column'));
      capacities.push(elementAt(columns.capacities, i, 'the capacities column'));
      costs.push(elementAt(columns.costs, i, 'the costs column'));
      shadows?.push(columns.shadows?.[i] ?? false);
      blocks?.push(columns.blocks?.[i] ?? 0);
    }
  });
  const storeClock = elementAt(ordered, 0, 'a batch of consumes').now === null;
  const [first] = algos;
  const algo = first !== undefined && algos.every((a) => a === first) ? first : 0;
  const single = keys.length === ordered.length;
  return [
    slackMs,
    single,
    algo,
    storeClock ? null : nows,
    rounds,
    reqs,
    keys,
    algos,
    limits,
    windows,
    capacities,
    costs,
    shadows,
    blocks,
  ];
}
