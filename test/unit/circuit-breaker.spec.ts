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
  beforeEach(() => jest.useFakeTimers());
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
});
