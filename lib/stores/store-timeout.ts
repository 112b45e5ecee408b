import type { RateLimitStoreCall } from './engine-store.js';

/** The module's `timeout` when none is given: the milliseconds a store call may take. */
export const DEFAULT_TIMEOUT_MS = 100;

/** The error of a store call that took longer than the module's `timeout`. */
export class RateLimitStoreTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`store call timed out after ${timeoutMs} ms`);
    this.name = 'RateLimitStoreTimeoutError';
  }
}

/**
 * Runs `call` and settles with it, or rejects with RateLimitStoreTimeoutError when the store has not answered
 * within `timeoutMs`. Only the store's time counts, not the app's: when the event loop is busy (an app
 * overloaded by its own traffic), a command may wait to be written (ioredis auto-pipelining writes in the
 * loop's check phase) and a reply that has arrived may wait to be read (timers run before Node reads its
 * sockets). So the clock starts in the check phase after the call, when what it issued has been written, and
 * when the timer fires it only arms the verdict: the loop's next poll phase reads whatever has arrived, and
 * the call times out in the check phase after it only if it is still unanswered. A store that does not answer
 * still fails after `timeoutMs` and a turn or two of the loop. A store that queues the call before sending it
 * says so through `timing` (RateLimitStoreCall): the clock then starts after `sent()`. The calls whose clocks
 * start in one run of code share their timers (ClockGroup).
 */
export function withTimeout<T>(call: (timing: RateLimitStoreCall) => Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const clock = new CallClock(timeoutMs, reject);
    let pending: Promise<T>;
    try {
      pending = call(clock);
    } catch (error) {
      if (clock.settle()) reject(error);
      return;
    }
    pending.then(
      (value) => clock.settle() && resolve(value),
      (error: unknown) => clock.settle() && reject(error),
    );
    clock.called();
  });
}

/**
 * The clocks that start in one run of the event loop's code (one macrotask and its microtasks): they would each
 * arm the same timers at the same turns, so they share them. Under load, the requests of a turn are decided in
 * one burst (the replies the loop just read): one setImmediate and one setTimeout for all of them instead of one
 * of each per call, which cost a Redis request about as much CPU as its decision. A clock that settles leaves
 * its group; the last one out clears the timers, so nothing is left pending.
 */
class ClockGroup {
  private readonly clocks = new Set<CallClock>();
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;

  constructor(private readonly timeoutMs: number) {
    this.immediate = setImmediate(() => {
      this.immediate = undefined;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.immediate = setImmediate(() => this.expire());
      }, this.timeoutMs);
    });
  }

  join(clock: CallClock): void {
    this.clocks.add(clock);
  }

  /** A clock leaves; the last one out clears the timers, and the group takes no more clocks. */
  leave(clock: CallClock): void {
    if (!this.clocks.delete(clock) || this.clocks.size > 0) return;
    if (forming.get(this.timeoutMs) === this) forming.delete(this.timeoutMs);
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.immediate = undefined;
  }

  private expire(): void {
    this.immediate = undefined;
    for (const clock of [...this.clocks]) clock.expire();
  }
}

/** The group that clocks starting now join, by timeout; closed at the end of the current run of code. */
const forming = new Map<number, ClockGroup>();

/** The group a clock starting now joins: the one formed in this run of code, or a new one. */
function groupFor(timeoutMs: number): ClockGroup {
  let group = forming.get(timeoutMs);
  if (group === undefined) {
    group = new ClockGroup(timeoutMs);
    forming.set(timeoutMs, group);
    // A microtask runs before the loop goes on: clocks that start later form a group of their own.
    queueMicrotask(() => forming.delete(timeoutMs));
  }
  return group;
}

/** The timeout of one call of withTimeout, and the RateLimitStoreCall its store sees. */
class CallClock implements RateLimitStoreCall {
  private settled = false;
  /** queued(): the clock waits for sent(); sent(): the clock runs (for good) */
  private phase: 'called' | 'queued' | 'sent' = 'called';
  private group: ClockGroup | undefined;

  constructor(
    readonly timeoutMs: number,
    private readonly reject: (error: unknown) => void,
  ) {}

  queued(): void {
    if (this.phase !== 'called') return;
    this.phase = 'queued';
    this.stop();
  }

  sent(): void {
    if (this.phase === 'sent') return;
    this.phase = 'sent';
    if (!this.settled) this.start();
  }

  /** After the call returned: the clock starts, unless the store queued it or has sent it already. */
  called(): void {
    if (this.phase === 'called' && !this.settled) this.start();
  }

  /** Whether the call is settled now (false: the timeout, or the call, settled it before). */
  settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.stop();
    return true;
  }

  /** The group's time is up, a poll phase after its timer: the call fails unless it has settled meanwhile. */
  expire(): void {
    if (this.settle()) this.reject(new RateLimitStoreTimeoutError(this.timeoutMs));
  }

  private start(): void {
    this.stop();
    this.group = groupFor(this.timeoutMs);
    this.group.join(this);
  }

  private stop(): void {
    this.group?.leave(this);
    this.group = undefined;
  }
}
