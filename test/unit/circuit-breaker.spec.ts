import { Logger } from '@nestjs/common';

import { CircuitBreaker, RateLimitCircuitOpenError } from '../../lib/engine/circuit-breaker.js';

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
