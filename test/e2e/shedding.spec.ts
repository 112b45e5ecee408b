import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';

import type { ServerResponse } from 'node:http';

import {
  Controller,
  Get,
  type INestApplication,
  type MiddlewareConsumer,
  Module,
  type NestModule,
} from '@nestjs/common';

import {
  Criticality,
  RateLimit,
  RateLimitModule,
  type RateLimitDecisionEvent,
  type RateLimitModuleOptions,
  RateLimitService,
} from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { LimitedDependency } from '../support/limited-dependency.js';
import { ADAPTERS, type AdapterName, createApp } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

// A dependency of 2 at once, 20 ms a call; 2 critical clients and 12 sheddable ones in a closed loop (each sends
// its next request when its last is answered): 7 times what the dependency can serve at once.
const dependency = new LimitedDependency(2, 20);
const CRITICAL_CLIENTS = 2;
const SHEDDABLE_CLIENTS = 12;
const ROUNDS = 15;
/** Bounds that keep a critical request admitted: sheddable ones fill at most limit × (1 − 0.5)² of it. */
const SHEDDING = { minLimit: 4, maxLimit: 8, initialLimit: 8, reserve: 0.5, maxEventLoopDelay: 0 };

@Controller()
class WorkController {
  @Get('charge')
  @Criticality('critical')
  async charge() {
    await dependency.call('critical');
    return 'charged';
  }

  @Get('history')
  @Criticality('sheddable')
  @RateLimit({ name: 'history', algorithm: 'fixed-window', limit: 100_000, window: '1h', key: 'ip' })
  async history() {
    await dependency.call('sheddable');
    return 'history';
  }

  @Get('once')
  @RateLimit({ name: 'once', algorithm: 'fixed-window', limit: 1, window: '1h', key: 'ip' })
  once() {
    return 'once';
  }

  @Get('late')
  @RateLimit({ name: 'late-slots', algorithm: 'concurrency', limit: 1, window: '1h', key: 'ip' })
  late() {
    lateCalls++;
    return 'late';
  }
}

let lateCalls = 0;
/** The requests in flight as each response of /once began to be sent (read from the running app's shedder). */
const inFlightAtResponse: number[] = [];
let inFlight = (): number => NaN;

/** Middleware of the app's own: /late waits 150 ms before the guards; /once notes the in-flight count. */
@Module({})
class MiddlewareModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply((_req: unknown, _res: unknown, next: () => void) => void setTimeout(next, 150)).forRoutes('late');
    consumer
      .apply((_req: unknown, res: ServerResponse, next: () => void) => {
        res.once('prefinish', () => inFlightAtResponse.push(inFlight()));
        next();
      })
      .forRoutes('once');
  }
}

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: { code?: string; criticality?: string; retryAfter?: number };
}

async function start(adapter: AdapterName, options: Partial<RateLimitModuleOptions>) {
  const events: RateLimitDecisionEvent[] = [];
  const { app } = await createApp(adapter, {
    imports: [RateLimitModule.forRoot({ ...options, onDecision: (event) => events.push(event) }), MiddlewareModule],
    controllers: [WorkController],
  });
  inFlight = () => app.get(RateLimiter).shedding?.shedder.inFlight ?? NaN;
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const get = async (path: string): Promise<Answer> => {
    const res = await fetch(`http://127.0.0.1:${port}/${path}`);
    const text = await res.text();
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: text.startsWith('{') ? JSON.parse(text) : {},
    };
  };
  return { app, events, get };
}

/** The closed loop: critical clients send ROUNDS requests each; sheddable ones loop until those are done. */
async function closedLoop(get: (path: string) => Promise<Answer>) {
  const critical: Answer[] = [];
  const sheddable: Answer[] = [];
  let done = false;
  const criticalClient = async () => {
    for (let i = 0; i < ROUNDS; i++) critical.push(await get('charge'));
  };
  const sheddableClient = async () => {
    while (!done) {
      const answer = await get('history');
      sheddable.push(answer);
      if (answer.status === 503) await sleep(5); // a refused client pauses (a real one waits Retry-After)
    }
  };
  const shedders = Array.from({ length: SHEDDABLE_CLIENTS }, sheddableClient);
  await sleep(50); // the sheddable clients fill the app first
  await Promise.all(Array.from({ length: CRITICAL_CLIENTS }, criticalClient));
  done = true;
  await Promise.all(shedders);
  return { critical, sheddable };
}

const statuses = (answers: readonly Answer[]) => new Set(answers.map((a) => a.status));
const count = (answers: readonly Answer[], status: number) => answers.filter((a) => a.status === status).length;

describe.each(ADAPTERS)('load shedding over HTTP (%s)', (adapter) => {
  let app: INestApplication | undefined;
  beforeEach(() => dependency.ahead.clear());
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('keeps critical requests flowing with bounded queueing while sheddable ones are refused fast', async () => {
    const started = await start(adapter, { shedding: SHEDDING });
    app = started.app;
    const { critical, sheddable } = await closedLoop(started.get);

    expect(critical).toHaveLength(CRITICAL_CLIENTS * ROUNDS);
    expect(statuses(critical)).toEqual(new Set([200]));
    // At most 2 sheddable requests (8 × 0.25) and the other critical one in flight: never more than 3 ahead.
    expect(dependency.maxAhead('critical')).toBeLessThanOrEqual(3);

    const refused = sheddable.filter((a) => a.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    expect(count(sheddable, 200) + refused.length).toBe(sheddable.length);
    for (const answer of refused) {
      expect(answer.body).toMatchObject({ code: 'OVERLOADED', criticality: 'sheddable' });
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(answer.body.retryAfter).toBe(Number(answer.retryAfter));
    }
    // Refused fast: a refused request never reached the dependency, nor its rate limit.
    expect(dependency.calls('sheddable')).toBe(count(sheddable, 200));
    const service = app.get(RateLimitService);
    expect((await service.peek('history', 'ip:127.0.0.1')).remaining).toBe(100_000 - count(sheddable, 200));

    const shed = started.events.filter((e) => e.source === 'shed');
    expect(shed).toHaveLength(refused.length);
    expect(new Set(shed.map((e) => e.criticality))).toEqual(new Set(['sheddable']));
    expect(shed[0]).toMatchObject({ policy: '', key: '', allowed: false, retryAfterMs: expect.any(Number) });
    const { shedder } = app.get(RateLimiter).shedding ?? {};
    expect(shedder?.shed('critical')).toBe(0);
    expect(shedder?.inFlight).toBe(0);
  });

  it('without shedding, every class queues together behind the dependency', async () => {
    const started = await start(adapter, {});
    app = started.app;
    const { critical, sheddable } = await closedLoop(started.get);

    expect(statuses(critical)).toEqual(new Set([200]));
    expect(statuses(sheddable)).toEqual(new Set([200]));
    // The 12 sheddable clients' requests are ahead of the critical ones as of their own.
    expect(dependency.medianAhead('critical')).toBeGreaterThanOrEqual(8);
    expect(dependency.medianAhead('sheddable')).toBeGreaterThanOrEqual(8);
  });

  it('gives back the slot of a request a rate limit refuses before its response, and sends problem details', async () => {
    const started = await start(adapter, {
      shedding: { ...SHEDDING, minLimit: 1, maxLimit: 1, initialLimit: 1 },
      errors: 'problem',
    });
    app = started.app;
    inFlightAtResponse.length = 0;
    expect((await started.get('once')).status).toBe(200);
    expect((await started.get('once')).status).toBe(429);
    // The 200 was in flight until its response ended; the 429 left as soon as its policy refused it.
    expect(inFlightAtResponse).toEqual([1, 0]);

    const held = Promise.all([started.get('charge'), started.get('history')]);
    const answers = await held;
    const refused = answers.find((a) => a.status === 503);
    expect(refused?.body).toEqual({
      type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
      title: 'Temporary Reduced Capacity',
      status: 503,
      detail: expect.stringContaining('overloaded'),
      'violated-policies': [],
      retryAfter: 1,
      code: 'OVERLOADED',
    });
  });
});

describe('a criticality the module does not know', () => {
  @Controller()
  class MistypedController {
    @Get('report')
    @Criticality('urgent' as never)
    report() {
      return 'report';
    }
  }

  it('stops the start, naming the handler', async () => {
    await expect(
      createApp('express', { imports: [RateLimitModule.forRoot({})], controllers: [MistypedController] }),
    ).rejects.toThrow(
      "@Criticality on MistypedController.report must be 'critical', 'default' or 'sheddable', got \"urgent\"",
    );
  });
});

// Regression: a client that left while a middleware ran (before the guard) left its shedding slot taken for good,
// and its concurrency slot until the policy's window ran out: the response's 'close' had passed, and a destroyed
// response never emits 'finish'.
describe.each(ADAPTERS)('a client that leaves before the guard runs (%s)', (adapter) => {
  it("gives its slots back: load shedding's and a concurrency policy's", async () => {
    const { app, get } = await start(adapter, { shedding: SHEDDING });
    try {
      const { port } = app.getHttpServer().address() as AddressInfo;
      const before = lateCalls;
      await expect(fetch(`http://127.0.0.1:${port}/late`, { signal: AbortSignal.timeout(30) })).rejects.toThrow();
      await waitFor(() => lateCalls === before + 1, 'the handler to run for the client that left');
      await waitFor(() => app.get(RateLimiter).shedding?.shedder.inFlight === 0, 'its slot to be given back', 2000);
      await app.get(RateLimiter).refundsSettled();
      expect((await get('late')).status).toBe(200); // the concurrency limit of 1 has room again
    } finally {
      await app.close();
    }
  });
});
