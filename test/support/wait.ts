/**
 * Polls `check` every 5 ms until it holds; rejects after `timeoutMs` naming `what` it waited for. For waiting on
 * something real (a server up, a handler reached, a message delivered); never to let time pass.
 * @example await waitFor(() => gate.held === 2, 'both requests in their handlers')
 */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string = check.toString(),
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Handlers that wait until the test lets them go: `pass()` in a handler holds it; `held` counts those waiting,
 * `entered` those that ever passed in, `most` the most held at once; `open()` lets every held one go.
 * @example async work() { await gate.pass(); return 'done'; }
 */
export class Gate {
  entered = 0;
  most = 0;
  private waiting: (() => void)[] = [];

  pass(): Promise<void> {
    this.entered++;
    const passed = new Promise<void>((resolve) => this.waiting.push(resolve));
    this.most = Math.max(this.most, this.waiting.length);
    return passed;
  }

  get held(): number {
    return this.waiting.length;
  }

  open(): void {
    for (const go of this.waiting.splice(0)) go();
  }
}

/**
 * What `promise` has come to, readable while it is pending: `done` once it settled, with its `value` or `error`.
 * @example const call = track(service.acquire('p', 'k')); await advance(100); expect(call.done).toBe(false);
 */
export function track<T>(promise: Promise<T>): { done: boolean; value?: T; error?: unknown } {
  const state: { done: boolean; value?: T; error?: unknown } = { done: false };
  promise.then(
    (value) => Object.assign(state, { done: true, value }),
    (error: unknown) => Object.assign(state, { done: true, error }),
  );
  return state;
}
