import { elementAt } from '../../element-at.js';
import type { ItemColumns } from './item-columns.js';

interface Waiting {
  readonly columns: ItemColumns;
  /** ms since the epoch, or null for the database's clock */
  readonly now: number | null;
  /**
   * performance.now() in the check phase after it was queued (NaN until then): the module's timeout starts
   * there too (withTimeout), so that time the loop spent on other work before it is not counted
   */
  queuedMs: number;
  resolve(values: string[]): void;
  reject(error: unknown): void;
}

/** Requests per statement at most (the arrays of a statement stay small; a busy store sends several). */
const MAX_REQUESTS = 64;

/**
 * Sends consumes to rate_limit_consume_v3, gathering the requests that arrive while `parallel` statements are
 * busy into the next statement: a request alone is sent at once, and under load one statement (one round trip,
 * one transaction) decides many. Each request stays all-or-nothing and is decided in arrival order with the
 * requests that share a key with it: in one statement by rounds (see consume.sql.ts); across statements by
 * holding a request back while a statement in flight has one of its keys (two statements on one key could take
 * its lock in either order). A request that has waited `queueTimeoutMs` for a statement is refused and never
 * sent: its caller has had its answer (the limiter's timeout, which is shorter), and a late statement would
 * charge a request already answered. Like the module's timeout, only the store's time counts: the wait starts
 * in the check phase after the request came, and when it is over the request is refused in the check phase
 * after the loop's next poll, unless a statement that ended meanwhile (its reply read in that poll) let it go
 * out — an app busy with its own traffic reads replies late, which is no failure of the store. `execute` runs
 * one statement with its values.
 */
export class ConsumeBatcher {
  private queue: Waiting[] = [];
  private busy = 0;
  private scheduled = false;
  /** The keys of the statements in flight, with how many of them hold each. */
  private readonly keysInFlight = new Map<string, number>();
  /** Set while requests wait, to refuse them on time even when no statement ends meanwhile. */
  private expiry: NodeJS.Timeout | undefined;
  /** Whether the check phase that starts the wait of the requests just queued is scheduled. */
  private stamping = false;

  constructor(
    private readonly execute: (values: unknown[]) => Promise<string | null>,
    private readonly slackMs: number,
    private readonly parallel: number,
    private readonly queueTimeoutMs: number,
  ) {}

  /** The reply values of one request: 4 per item (allowed 0/1/2, remaining, reset_ms, retry_ms), as strings. */
  consume(columns: ItemColumns, now: number | null): Promise<string[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ columns, now, queuedMs: NaN, resolve, reject });
      if (!this.stamping) {
        this.stamping = true;
        setImmediate(() => this.startWaits());
      }
      if (!this.scheduled) {
        // the requests of this turn of the event loop go out together
        this.scheduled = true;
        queueMicrotask(() => this.flush());
      }
    });
  }

  /** In the check phase after requests were queued: their wait starts (those still queued). */
  private startWaits(): void {
    this.stamping = false;
    const nowMs = performance.now();
    for (const waiting of this.queue) if (Number.isNaN(waiting.queuedMs)) waiting.queuedMs = nowMs;
    this.watchExpiry();
  }

  private flush(): void {
    this.scheduled = false;
    while (this.busy < this.parallel && this.queue.length > 0) {
      const size = Math.min(MAX_REQUESTS, Math.ceil(this.queue.length / (this.parallel - this.busy)));
      const batch = this.keysInFlight.size === 0 ? this.queue.splice(0, size) : this.takeFree(size);
      // Everything waiting shares a key with a statement in flight: the next flush is when one ends.
      if (batch.length === 0) break;
      this.send(batch);
    }
    this.watchExpiry();
  }

  /**
   * Refuses the requests that have waited too long: the oldest first (the queue is in arrival order, and the
   * requests whose wait has not started yet are at its end).
   */
  private refuseExpired(): void {
    const oldest = performance.now() - this.queueTimeoutMs;
    let expired = 0;
    while (expired < this.queue.length && (this.queue[expired]?.queuedMs ?? NaN) <= oldest) expired++;
    if (expired === 0) return;
    const error = new Error(
      `nest-rate-limit: a PostgreSQL consume waited ${this.queueTimeoutMs} ms for a statement (queueTimeoutMs)`,
    );
    for (const waiting of this.queue.splice(0, expired)) waiting.reject(error);
  }

  /**
   * While requests wait, a timer at the oldest one's deadline (a stuck statement ends no flush), set no later
   * than the module's own for that request; when it fires, the refusal waits for the next check phase, after
   * the poll that reads what has arrived.
   */
  private watchExpiry(): void {
    const [oldest] = this.queue;
    if (oldest === undefined || Number.isNaN(oldest.queuedMs) || this.expiry !== undefined) return;
    const inMs = Math.max(0, Math.floor(oldest.queuedMs + this.queueTimeoutMs - performance.now()));
    this.expiry = setTimeout(() => {
      setImmediate(() => {
        this.expiry = undefined;
        this.refuseExpired();
        this.flush();
      });
    }, inMs);
    this.expiry.unref();
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
    this.busy++;
    this.holdKeys(batch, +1);
    this.execute(values)
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
        this.busy--;
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
