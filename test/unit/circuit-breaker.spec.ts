import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';

import { CircuitBreaker, RateLimitCircuitOpenError } from '../../lib/engine/circuit-breaker.js';
import { RateLimitStoreTimeoutError, withTimeout } from '../../lib/stores/store-timeout.js';

const breaker = () =>
  new CircuitBreaker({ timeoutMs: 1_000, threshold: 5, probeIntervalMs: 60_000, logger: new Logger('test') });

const failing = (error: Error) => () => Promise.reject(error);

describe('CircuitBreaker', () => {
  it('opens after 5 failures in a row', async () => {
    const b = breaker();
    try {
      for (let i = 0; i < 5; i++) await expect(b.run(failing(new Error(`down ${i}`)))).rejects.toThrow('down');
      expect(b.isOpen).toBe(true);
      await expect(b.run(() => Promise.resolve(1))).rejects.toThrow(RateLimitCircuitOpenError);
    } finally {
      b.dispose();
    }
  });

  // Regression: a PostgreSQL statement that carried gathered consumes rejects each of them with the same error;
  // counted once per request, one transient error with 5 requests aboard opened the breaker.
  it('counts one failed call that several requests shared as one failure', async () => {
    const b = breaker();
    try {
      const shared = new Error('statement failed');
      await Promise.all(Array.from({ length: 8 }, () => expect(b.run(failing(shared))).rejects.toBe(shared)));
      expect(b.isOpen).toBe(false);
      expect(await b.run(() => Promise.resolve('answered'))).toBe('answered');
    } finally {
      b.dispose();
    }
  });
});

describe('withTimeout', () => {
  // Microtasks stay real: the clocks of one run of code are grouped until its microtasks run.
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['queueMicrotask', 'nextTick'] }));
  afterEach(() => jest.useRealTimers());

  /** Settles `promise` into a record the test reads after advancing the fake clock. */
  function watch(promise: Promise<unknown>): { error?: unknown; value?: unknown } {
    const seen: { error?: unknown; value?: unknown } = {};
    promise.then(
      (value) => (seen.value = value),
      (error: unknown) => (seen.error = error),
    );
    return seen;
  }

  it('times a call out after timeoutMs (and the turns that let an arrived reply be read)', async () => {
    const seen = watch(withTimeout(() => new Promise(() => undefined), 100));
    await jest.advanceTimersByTimeAsync(99);
    expect(seen.error).toBeUndefined();
    await jest.advanceTimersByTimeAsync(5);
    expect(seen.error).toEqual(new RateLimitStoreTimeoutError(100));
  });

  it('stops while the store says the call is queued, and counts from when it is sent', async () => {
    let send: () => void = () => undefined;
    const seen = watch(
      withTimeout((timing) => {
        timing.queued();
        send = () => timing.sent();
        return new Promise(() => undefined);
      }, 100),
    );
    await jest.advanceTimersByTimeAsync(500);
    expect(seen.error).toBeUndefined();
    send();
    await jest.advanceTimersByTimeAsync(99);
    expect(seen.error).toBeUndefined();
    await jest.advanceTimersByTimeAsync(5);
    expect(seen.error).toEqual(new RateLimitStoreTimeoutError(100));
  });

  it('settles with a queued call that the store answers', async () => {
    let answer: (value: string) => void = () => undefined;
    const seen = watch(
      withTimeout((timing) => {
        timing.queued();
        return new Promise<string>((resolve) => (answer = resolve));
      }, 100),
    );
    await jest.advanceTimersByTimeAsync(300);
    answer('decided');
    await jest.advanceTimersByTimeAsync(0);
    expect(seen).toEqual({ value: 'decided' });
  });
  // Review: RateLimitStoreCall is public, so a custom store may call it in any order.
  it('lets neither a second sent() nor a queued() after sent() stretch the clock', async () => {
    const seen = watch(
      withTimeout((timing) => {
        timing.queued();
        timing.sent();
        setTimeout(() => (timing.sent(), timing.queued()), 50);
        return new Promise(() => undefined);
      }, 100),
    );
    await jest.advanceTimersByTimeAsync(99);
    expect(seen.error).toBeUndefined();
    await jest.advanceTimersByTimeAsync(5);
    expect(seen.error).toEqual(new RateLimitStoreTimeoutError(100));
  });

  it('rejects with what a call throws at once, and leaves no timer behind', async () => {
    const thrown = new Error('no connection');
    const seen = watch(
      withTimeout(() => {
        throw thrown;
      }, 100),
    );
    await jest.advanceTimersByTimeAsync(0);
    expect(seen.error).toBe(thrown);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('shares one timer among the calls started in one run of code, and times out each that has not settled', async () => {
    const answers: ((value: string) => void)[] = [];
    const calls = Array.from({ length: 50 }, () =>
      watch(withTimeout(() => new Promise<string>((resolve) => answers.push(resolve)), 100)),
    );
    // One setImmediate for the 50 clocks, then one setTimeout.
    expect(jest.getTimerCount()).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(jest.getTimerCount()).toBe(1);
    answers[7]?.('answered');
    await jest.advanceTimersByTimeAsync(98);
    expect(calls.filter((seen) => seen.error !== undefined)).toHaveLength(0);
    await jest.advanceTimersByTimeAsync(5);
    expect(calls[7]).toEqual({ value: 'answered' });
    expect(calls.filter((seen) => seen.error instanceof RateLimitStoreTimeoutError)).toHaveLength(49);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('gives calls started in later runs of code a clock of their own, and clears the timers of settled groups', async () => {
    const early = watch(withTimeout(() => new Promise(() => undefined), 100));
    await jest.advanceTimersByTimeAsync(50);
    let answer: (value: string) => void = () => undefined;
    const late = watch(withTimeout(() => new Promise<string>((resolve) => (answer = resolve)), 100));
    const answered = watch(withTimeout(() => new Promise(() => undefined), 100));
    await jest.advanceTimersByTimeAsync(55);
    expect(early.error).toEqual(new RateLimitStoreTimeoutError(100));
    expect([late, answered]).toEqual([{}, {}]);
    answer('late');
    await jest.advanceTimersByTimeAsync(50);
    expect(late).toEqual({ value: 'late' });
    expect(answered.error).toEqual(new RateLimitStoreTimeoutError(100));
    // Every group settled: nothing keeps the process alive.
    const settled = withTimeout(() => Promise.resolve('at once'), 100);
    expect(await settled).toBe('at once');
    expect(jest.getTimerCount()).toBe(0);
  });
});
