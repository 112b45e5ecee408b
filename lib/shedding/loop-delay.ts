/** How often the event-loop watch measures the loop's delay. */
export const LOOP_SAMPLE_MS = 100;

/**
 * Measures the event loop's delay: a timer every LOOP_SAMPLE_MS (unref'd: it keeps no process alive) that
 * reports how late it fired. A loop blocked by synchronous work (a large JSON body, a hot regex) fires it late.
 * The first tick is not reported: it measures the application's own start (modules made, routes registered
 * after the module's init), not load.
 */
export class EventLoopWatch {
  private readonly timer: NodeJS.Timeout;
  private expected: number;

  constructor(
    report: (delayMs: number) => void,
    now: () => number = () => performance.now(),
    intervalMs = LOOP_SAMPLE_MS,
  ) {
    this.expected = now() + intervalMs;
    let first = true;
    this.timer = setInterval(() => {
      const at = now();
      if (!first) report(Math.max(0, at - this.expected));
      first = false;
      this.expected = at + intervalMs;
    }, intervalMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }
}
