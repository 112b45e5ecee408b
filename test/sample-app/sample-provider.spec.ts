import { jest } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';

import { type Clock, RateLimitExceededException, RateLimitService } from '../../lib/index.js';
import { AiProviderService, PROVIDER_KEY, PROVIDER_RPM } from '../../sample-app/ai-provider.service.js';
import { nth } from '../support/harness.js';
import { TEST_START_MS } from '../support/time.js';
import { track } from '../support/wait.js';
import { startSampleApp, TestModel } from './harness.js';

// Jest's fake timers move Date.now() and performance.now() together: the limiter's clock (this one) and the
// timers and deadlines of acquire() follow one fake time, so the waits take no real time and every count is exact.
const fakeTime: Clock = { now: () => Date.now() };
const advance = (ms: number) => jest.advanceTimersByTimeAsync(ms);

/** What each call has come to: answered, refused (with the exception's body), or still waiting. */
const outcomes = (calls: ReturnType<typeof track>[]) =>
  calls.map((c) => (!c.done ? 'waiting' : c.error === undefined ? 'answered' : 'refused'));

describe("the sample app's AI provider stub (provider-rpm: 3 at once, then one every 2 s; waits up to 5 s)", () => {
  let app: INestApplication;
  let model: TestModel;
  let provider: AiProviderService;

  beforeEach(async () => {
    delete process.env.REDIS_URL; // the in-memory store, whatever the environment
    model = new TestModel();
    app = await startSampleApp('express', fakeTime, model);
    provider = app.get(AiProviderService);
    // After the start: only the limiter's decisions and the waits of acquire() run on fake time.
    jest.useFakeTimers({ now: TEST_START_MS, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
  });
  afterEach(async () => {
    jest.useRealTimers();
    await app.close();
  });

  const call = () => track(provider.complete({ prompt: 'Hello', maxTokens: 16 }, 'acme'));

  it('waits for a slot of its budget instead of failing, and calls the provider once per slot', async () => {
    const calls = Array.from({ length: 5 }, call);
    await advance(0);
    expect(outcomes(calls)).toEqual(['answered', 'answered', 'answered', 'waiting', 'waiting']);
    expect(model.roundTrips).toBe(3);

    await advance(2_500); // the 4th slot has come
    expect(outcomes(calls)).toEqual(['answered', 'answered', 'answered', 'answered', 'waiting']);
    expect(model.roundTrips).toBe(4);

    await advance(2_000); // and the 5th, within the 5 s the call may wait
    expect(outcomes(calls)).toEqual(['answered', 'answered', 'answered', 'answered', 'answered']);
    expect(calls.map((c) => c.value)).toEqual(
      Array(5).fill({ text: 'Hello', usage: { promptTokens: 2, completionTokens: 8, totalTokens: 10 } }),
    );
    expect(model.roundTrips).toBe(5);
  });

  it('refuses a call with 429 when no slot would come within 5 s, without calling the provider', async () => {
    const calls = Array.from({ length: 6 }, call);
    await advance(4_500);
    // The 6th would have its slot 6 s after the start: refused once that is certain, not after a wait in vain.
    expect(outcomes(calls)).toEqual(['answered', 'answered', 'answered', 'answered', 'answered', 'refused']);
    expect(model.roundTrips).toBe(5);
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
    expect(model.roundTrips).toBe(6);
  });

  /** Lets the sockets and handlers run (real I/O, outside the fake timers) until `check` holds. */
  const until = async (check: () => boolean, what: string) => {
    for (let turns = 0; !check(); turns++) {
      if (turns > 10_000) throw new Error(`never came: ${what}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  it("serves the tenants waiting on its budget in turn, through HTTP: neither waits for all of the other's queue", async () => {
    const acquire = jest.spyOn(app.get(RateLimitService), 'acquire');
    // The budget used up (by another instance, say): the next slot comes in 2 s, and one every 2 s after it.
    await app.get(RateLimitService).consume(PROVIDER_RPM, PROVIDER_KEY, { cost: 3 });
    const server = app.getHttpServer() as Parameters<typeof request>[0];
    /** Sends a completion and lets it reach the budget's queue, so that the calls queue in the order sent. */
    const ask = async (user: string, n: number) => {
      const queued = acquire.mock.calls.length;
      const call = track(
        request(server)
          .post('/ai/complete')
          .set('x-api-key', `demo-key-${user}`)
          .send({ prompt: `${user} ${n}`, maxTokens: 16 })
          .then((res) => res),
      );
      await until(() => acquire.mock.calls.length > queued, `${user} ${n} waiting for the budget`);
      return call;
    };
    // Tenant acme queues three calls (alice two, carol one), then tenant globex two (bob's).
    const acme = [await ask('alice', 1), await ask('alice', 2), await ask('carol', 1)];
    const globex = [await ask('bob', 1), await ask('bob', 2)];

    // A call may wait 5 s: two slots (at 2 s and 4 s). First come, first served, both would be acme's and
    // globex would get none; in turn, each tenant gets one.
    await advance(2_001);
    await until(() => model.roundTrips === 1, 'the first slot used');
    await advance(2_001);
    await until(() => [...acme, ...globex].every((call) => call.done), 'every call answered');
    const statuses = (calls: typeof acme) => calls.map((call) => call.value?.status);
    expect(model.calls.map((c) => c.prompt)).toEqual(['alice 1', 'bob 1']);
    expect(statuses(acme)).toEqual([200, 429, 429]);
    expect(statuses(globex)).toEqual([200, 429]);
    for (const refused of [...acme, ...globex].filter((call) => call.value?.status === 429)) {
      expect(refused.value?.body.policy).toBe('provider-rpm');
    }
  });
});
