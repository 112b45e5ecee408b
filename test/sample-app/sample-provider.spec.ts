import { jest } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';

import { type Clock, RateLimitExceededException } from '../../lib/index.js';
import { AiProviderService } from '../../sample-app/ai-provider.service.js';
import { nth } from '../support/harness.js';
import { TEST_START_MS } from '../support/time.js';
import { track } from '../support/wait.js';
import { startSampleApp, TestNetwork } from './harness.js';

// Jest's fake timers move Date.now() and performance.now() together: the limiter's clock (this one) and the
// timers and deadlines of acquire() follow one fake time, so the waits take no real time and every count is exact.
const fakeTime: Clock = { now: () => Date.now() };
const advance = (ms: number) => jest.advanceTimersByTimeAsync(ms);

/** What each call has come to: answered, refused (with the exception's body), or still waiting. */
const outcomes = (calls: ReturnType<typeof track>[]) =>
  calls.map((c) => (!c.done ? 'waiting' : c.error === undefined ? 'answered' : 'refused'));

describe("the sample app's AI provider stub (provider-rpm: 3 at once, then one every 2 s; waits up to 5 s)", () => {
  let app: INestApplication;
  let network: TestNetwork;
  let provider: AiProviderService;

  beforeEach(async () => {
    delete process.env.REDIS_URL; // the in-memory store, whatever the environment
    network = new TestNetwork();
    app = await startSampleApp('express', fakeTime, network);
    provider = app.get(AiProviderService);
    // After the start: only the limiter's decisions and the waits of acquire() run on fake time.
    jest.useFakeTimers({ now: TEST_START_MS, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
  });
  afterEach(async () => {
    jest.useRealTimers();
    await app.close();
  });

  const call = () => track(provider.complete({ prompt: 'Hello', maxTokens: 16 }));

  it('waits for a slot of its budget instead of failing, and calls the provider once per slot', async () => {
    const calls = Array.from({ length: 5 }, call);
    await advance(0);
    expect(outcomes(calls)).toEqual(['answered', 'answered', 'answered', 'waiting', 'waiting']);
    expect(network.roundTrips).toBe(3);

    await advance(2_500); // the 4th slot has come
    expect(outcomes(calls)).toEqual(['answered', 'answered', 'answered', 'answered', 'waiting']);
    expect(network.roundTrips).toBe(4);

    await advance(2_000); // and the 5th, within the 5 s the call may wait
    expect(outcomes(calls)).toEqual(['answered', 'answered', 'answered', 'answered', 'answered']);
    expect(calls.map((c) => c.value)).toEqual(Array(5).fill({ completionTokens: 8 }));
    expect(network.roundTrips).toBe(5);
  });

  it('refuses a call with 429 when no slot would come within 5 s, without calling the provider', async () => {
    const calls = Array.from({ length: 6 }, call);
    await advance(4_500);
    // The 6th would have its slot 6 s after the start: refused once that is certain, not after a wait in vain.
    expect(outcomes(calls)).toEqual(['answered', 'answered', 'answered', 'answered', 'answered', 'refused']);
    expect(network.roundTrips).toBe(5);
    const refused = nth(calls, 5).error;
    expect(refused).toBeInstanceOf(RateLimitExceededException);
    expect((refused as RateLimitExceededException).getResponse()).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'RATE_LIMITED',
      message: 'The AI provider is at its limit of 30 requests per minute for this service; retry in 2 s',
      policy: 'provider-rpm',
      retryAfter: 2,
    });

    await advance(2_000); // the budget goes on: the next call gets the slot the 6th could not wait for
    const later = call();
    await advance(0);
    expect(outcomes([later])).toEqual(['answered']);
    expect(network.roundTrips).toBe(6);
  });
});
