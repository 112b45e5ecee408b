/** Milliseconds on a monotonic clock: the real time, whatever clock the module decides limits with. */
export const monotonicNow = (): number => performance.now();

/**
 * Log lines throttled per reason: the first line of a reason is written, the next ones within `quietMs` are
 * only counted, and the first line after that says how many were held back. Time is real, monotonic time
 * (`now`, which a test may drive), never the module's injectable clock: a fake clock that stands still would
 * mute the log for good, one that runs ahead would flood it. At most `maxReasons` reasons are remembered.
 */
export class ThrottledLog {
  private readonly last = new Map<string, { atMs: number; held: number }>();

  constructor(
    private readonly quietMs: number,
    private readonly now: () => number = monotonicNow,
    private readonly maxReasons = 1000,
  ) {}

  /** Calls `write` with the count of lines held back since the last one of `reason`, unless it holds this one. */
  note(reason: string, write: (held: number) => void): void {
    const nowMs = this.now();
    const seen = this.last.get(reason);
    if (seen !== undefined && nowMs - seen.atMs < this.quietMs) {
      seen.held++;
      return;
    }
    write(seen?.held ?? 0);
    if (seen === undefined && this.last.size >= this.maxReasons) this.last.clear();
    this.last.set(reason, { atMs: nowMs, held: 0 });
  }
}
