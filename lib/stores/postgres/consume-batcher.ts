import { RateLimitStoreTimeoutError, withTimeout } from '../store-timeout.js';
import { REPLY_WIDTH } from '../protocol.js';
import type { RateLimitStoreCall } from '../engine-store.js';
import type { ItemColumns } from './item-columns.js';
import { type Consume, inRounds, statementValues } from './statement-values.js';

interface Waiting extends Consume {
  /** The module's timeout of this consume: it waits while the consume is queued, and counts once it is sent. */
  readonly call: RateLimitStoreCall | undefined;
  /** performance.now() in the check phase after it was queued (NaN until then), for queueTimeoutMs */
  queuedMs: number;
  resolve(values: string[]): void;
  reject(error: unknown): void;
}

/** A statement in flight: its requests (their keys are held), and whether it is out for longer than the timeout. */
interface Statement {
  readonly batch: readonly Waiting[];
  overdue: boolean;
}

/** Requests per statement at most (the arrays of a statement stay small; a busy store sends several). */
const MAX_REQUESTS = 64;

/**
 * Sends consumes to rate_limit_consume, gathering the requests that arrive while `parallel` statements are
 * busy into the next statement: a request alone is sent at once, and under load one statement (one round trip,
 * one transaction) decides many. Each request stays all-or-nothing and is decided in arrival order with the
 * requests that share a key with it: in one statement by rounds (see consume.sql.ts); across statements by
 * holding a request back while a statement in flight has one of its keys (two statements on one key could take
 * its lock in either order).
 *
 * The module's timeout of a request counts from when its statement is sent (RateLimitStoreCall): time in the
 * queue is not the store's alone, since an app busy with its own traffic reads the replies that let the queue
 * move late. A waiting request is refused, and never sent: when what it waits for has stopped — every
 * statement in flight (for a request that waits for one to end), or the statement holding one of its keys, out
 * for longer than the module's timeout (`queueTimeoutMs` without one); when it has waited `queueTimeoutMs`;
 * and at once when `maxQueued` requests wait already. Both clocks count as the module counts its timeout
 * (withTimeout): from the check phase after the start, with the verdict after the next poll, so that replies
 * that arrived while the loop was busy are read first. `execute` runs one statement with its values.
 */
export class ConsumeBatcher {
  private queue: Waiting[] = [];
  private scheduled = false;
  private readonly inFlight = new Set<Statement>();
  /** How many of them are overdue. */
  private overdue = 0;
  /** The keys of the statements in flight, with how many of them hold each. */
  private readonly keysInFlight = new Map<string, number>();
  /** Past it, a statement is overdue: the module's timeout (the least seen), or queueTimeoutMs. */
  private overdueMs: number;
  /** Whether the check phase that starts the wait of the requests just queued is scheduled. */
  private stamping = false;
  /** Set while requests wait, at the oldest one's queueTimeoutMs. */
  private expiry: NodeJS.Timeout | undefined;
  /** The refusal of the requests past maxQueued in this turn (one error: one failure for the breaker). */
  private overflow: Error | undefined;

  constructor(
    private readonly execute: (values: unknown[]) => Promise<string | null>,
    private readonly slackMs: number,
    private readonly parallel: number,
    private readonly queueTimeoutMs: number,
    private readonly maxQueued: number,
  ) {
    this.overdueMs = queueTimeoutMs;
  }

  /** The reply values of one request: 4 per item (allowed 0/1/2, remaining, reset_ms, retry_ms), as strings. */
  consume(columns: ItemColumns, now: number | null, call?: RateLimitStoreCall): Promise<string[]> {
    if (this.queue.length >= this.maxQueued) {
      this.overflow ??= new Error(
        `nest-rate-limit: ${this.maxQueued} PostgreSQL consumes wait for a statement already (maxQueued)`,
      );
      return Promise.reject(this.overflow);
    }
    if (call !== undefined && call.timeoutMs < this.overdueMs) this.overdueMs = call.timeoutMs;
    return new Promise((resolve, reject) => {
      call?.queued();
      this.queue.push({ columns, now, call, queuedMs: NaN, resolve, reject });
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

  private flush(): void {
    this.scheduled = false;
    this.overflow = undefined;
    // what waits for an overdue statement waits no longer (before sending: it may hold others back)
    if (this.queue.length > 0 && this.overdue > 0) this.refuseStuck();
    while (this.inFlight.size < this.parallel && this.queue.length > 0) {
      const size = Math.min(MAX_REQUESTS, Math.ceil(this.queue.length / (this.parallel - this.inFlight.size)));
      const batch = this.keysInFlight.size === 0 ? this.queue.splice(0, size) : this.takeFree(size);
      // Everything waiting shares a key with a statement in flight: the next flush is when one ends.
      if (batch.length === 0) break;
      this.send(batch);
    }
    this.watchExpiry();
  }

  /**
   * Refuses the waiting requests whose statements have stopped: all of them when every statement in flight is
   * overdue (no slot frees in time), else those that share a key with an overdue statement.
   */
  private refuseStuck(): void {
    const overdueKeys = new Set<string>();
    const allOverdue = this.inFlight.size >= this.parallel && this.overdue === this.inFlight.size;
    for (const statement of this.inFlight) {
      if (!statement.overdue) continue;
      for (const { columns } of statement.batch) for (const key of columns.keys) overdueKeys.add(key);
    }
    const stuck = (waiting: Waiting) => allOverdue || waiting.columns.keys.some((key) => overdueKeys.has(key));
    this.refuse(
      stuck,
      `nest-rate-limit: a PostgreSQL consume waited for a statement out for more than ${this.overdueMs} ms`,
    );
  }

  private refuse(which: (waiting: Waiting) => boolean, message: string): void {
    const refused = this.queue.filter(which);
    if (refused.length === 0) return;
    this.queue = this.queue.filter((waiting) => !which(waiting));
    const error = new Error(message);
    for (const waiting of refused) waiting.reject(error);
  }

  /** In the check phase after requests were queued: their wait starts (those still queued). */
  private startWaits(): void {
    this.stamping = false;
    const nowMs = performance.now();
    for (const waiting of this.queue) if (Number.isNaN(waiting.queuedMs)) waiting.queuedMs = nowMs;
    this.watchExpiry();
  }

  /** While requests wait, a timer at the oldest one's queueTimeoutMs; its verdict waits for the next poll. */
  private watchExpiry(): void {
    const [oldest] = this.queue;
    if (oldest === undefined || Number.isNaN(oldest.queuedMs) || this.expiry !== undefined) return;
    const inMs = Math.max(0, Math.floor(oldest.queuedMs + this.queueTimeoutMs - performance.now()));
    this.expiry = setTimeout(() => {
      setImmediate(() => {
        this.expiry = undefined;
        const oldestMs = performance.now() - this.queueTimeoutMs;
        this.refuse(
          (waiting) => waiting.queuedMs <= oldestMs,
          `nest-rate-limit: a PostgreSQL consume waited ${this.queueTimeoutMs} ms for a statement (queueTimeoutMs)`,
        );
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
    const statement: Statement = { batch, overdue: false };
    this.inFlight.add(statement);
    this.holdKeys(batch, +1);
    const running = this.execute(values);
    for (const waiting of batch) waiting.call?.sent();
    // Overdue as the module's timeout counts it: the requests waiting for this statement are then refused.
    withTimeout(() => running, this.overdueMs).catch((error: unknown) => {
      if (!(error instanceof RateLimitStoreTimeoutError) || !this.inFlight.has(statement)) return;
      statement.overdue = true;
      this.overdue++;
      this.flush();
    });
    running
      .then(
        (reply) => {
          const all = reply === null ? [] : reply.split(',');
          let at = 0;
          for (const waiting of ordered) {
            const end = at + waiting.columns.keys.length * REPLY_WIDTH;
            waiting.resolve(all.slice(at, end));
            at = end;
          }
        },
        (error: unknown) => ordered.forEach((waiting) => waiting.reject(error)),
      )
      .finally(() => {
        this.inFlight.delete(statement);
        if (statement.overdue) this.overdue--;
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
