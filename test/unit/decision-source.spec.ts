import { Controller, Get, type INestApplication, Logger } from '@nestjs/common';
import request from 'supertest';

import {
  MemoryRateLimitStore,
  RateLimit,
  RateLimitModule,
  validatePolicy,
  type RateLimitPolicy,
} from '../../lib/index.js';
import {
  DecisionEngine,
  type EngineItem,
  type Evaluation,
  sourceAt,
  StoreUnavailable,
} from '../../lib/engine/decision-engine.js';
import type { RateLimitMetricOutcome, RateLimitMetrics } from '../../lib/metrics/otel-metrics.js';
import type { FailMode, RateLimitDecisionSource } from '../../lib/policy/policy.types.js';
import { DecisionEvents, type RateLimitDecisionEvent } from '../../lib/limiter/decision-events.js';
import type { RateLimitStore } from '../../lib/stores/rate-limit-store.js';
import { FailingStore } from '../support/failing-store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { createApp } from '../support/nest-app.js';

// Where each decision came from, as `onDecision`'s event.source and the decisions metric's `rate_limit.source`:
// one engine on a store seen as remote (so it has a cache of denials and grants leases), a fake clock, and the
// request path's last step (DecisionEvents, fed as conclusion.ts feeds it).

const quiet = { log() {}, warn() {}, error() {} };

function setup() {
  const clock = new FakeClock(1_700_000_000_000);
  const inner = new MemoryRateLimitStore({ clock });
  // Not in process: the engine keeps a cache of its denials and takes leases from it.
  const store: RateLimitStore & { health: FailingStore['health'] } = Object.assign(new FailingStore(inner), {
    grantsUpTo: true,
  });
  const engine = new DecisionEngine({
    stores: { rates: store, quotas: store, owned: [] },
    clock,
    timeoutMs: 5000,
    logger: quiet,
  });
  const counted: [string, RateLimitMetricOutcome, RateLimitDecisionSource | undefined][] = [];
  const metrics: RateLimitMetrics = {
    decision: (policy, outcome, source) => counted.push([policy, outcome, source]),
    storeCall: () => undefined,
    slots: () => undefined,
    overlongWait: () => undefined,
    shed: () => undefined,
  };
  engine.metrics = metrics;
  const events: RateLimitDecisionEvent[] = [];
  const reporter = new DecisionEvents(new Logger('test'), (event) => events.push(event));
  reporter.metrics = metrics;
  /** Decides `items` and reports them as the request path's conclusion does. */
  const decide = async (items: readonly EngineItem[]): Promise<Evaluation> => {
    const evaluation = await engine.decide(items);
    reporter.report(
      evaluation.items.map((item, i) => [item, evaluation.decisions[i]!, sourceAt(evaluation, i)] as const),
      undefined,
    );
    return evaluation;
  };
  return { clock, store, engine, counted, events, decide };
}

let engines: DecisionEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.map((e) => e.dispose()));
  engines = [];
});
function start(): ReturnType<typeof setup> {
  const s = setup();
  engines.push(s.engine);
  return s;
}

const item = (policy: RateLimitPolicy, failMode: FailMode = 'open'): EngineItem => ({
  policy: validatePolicy(policy),
  key: 'k',
  cost: 1,
  failMode,
  order: 0,
});

const POLICY = { name: 'p', algorithm: 'fixed-window', limit: 2, window: '1m' } as const;

describe('where a decision came from', () => {
  it("'store': the store decided (allowed or denied)", async () => {
    const { decide, events, counted } = start();
    const limited = item(POLICY);
    for (let i = 0; i < 3; i++) await decide([limited]);
    expect(events.map((e) => [e.allowed, e.source])).toEqual([
      [true, 'store'],
      [true, 'store'],
      [false, 'store'],
    ]);
    expect(counted).toEqual([
      ['p', 'allowed', 'store'],
      ['p', 'allowed', 'store'],
      ['p', 'denied', 'store'],
    ]);
  });

  it("'deny-cache': the cache of the store's denials answered, without a store call", async () => {
    const { decide, events, counted, store } = start();
    const limited = item(POLICY);
    for (let i = 0; i < 3; i++) await decide([limited]);
    // The store is down: only the cache can answer, and it does.
    store.health = 'fails';
    const answered = await decide([limited]);
    expect(answered.decisions.map((d) => d.allowed)).toEqual([false]);
    expect(events.at(-1)).toMatchObject({ allowed: false, source: 'deny-cache' });
    expect(counted.at(-1)).toEqual(['p', 'deny-cache', 'deny-cache']);
  });

  it("'lease': spent from the units this instance took ahead; 'store' for the take itself", async () => {
    const { decide, events, counted } = start();
    const leased = item({ name: 'leased', algorithm: 'fixed-window', limit: 100, window: '1m', lease: 10 });
    // Takes grow from the cost alone: the first requests go to the store, later ones spend what it took ahead.
    for (let i = 0; i < 10; i++) await decide([leased]);
    const sources = events.map((e) => e.source);
    expect(sources[0]).toBe('store');
    expect(sources.slice(-1)).toEqual(['lease']);
    expect(new Set(sources)).toEqual(new Set(['store', 'lease']));
    expect(counted.map(([, , source]) => source)).toEqual(sources);
    expect(events.every((e) => e.allowed)).toBe(true);
  });

  it("'lease' beside 'store' in one request: each decision keeps its own source", async () => {
    const { decide, events } = start();
    const leased = item({ name: 'leased', algorithm: 'fixed-window', limit: 100, window: '1m', lease: 10 });
    const plain = { ...item({ name: 'plain', algorithm: 'fixed-window', limit: 100, window: '1m' }), order: 1 };
    for (let i = 0; i < 10; i++) await decide([leased, plain]);
    const of = (policy: string) => events.filter((e) => e.policy === policy).map((e) => e.source);
    expect(of('plain')).toEqual(Array.from({ length: 10 }, () => 'store'));
    expect(of('leased').at(-1)).toBe('lease');
  });

  it("'local': the in-process store of a failMode 'local' policy decided while the store fails", async () => {
    const { decide, events, counted, store } = start();
    store.health = 'fails';
    const local = item({ ...POLICY, name: 'local', localLimit: 1 }, 'local');
    await decide([local]);
    await decide([local]);
    expect(events.map((e) => [e.allowed, e.source])).toEqual([
      [true, 'local'],
      [false, 'local'],
    ]);
    // Counted once each, by the store's failure, as failed-local.
    expect(counted).toEqual([
      ['local', 'failed-local', 'local'],
      ['local', 'failed-local', 'local'],
    ]);
  });

  it("'fail-open' and 'fail-closed' in the engine: no store decided; the metric says which fail mode did", async () => {
    const { decide, counted, store, engine } = start();
    store.health = 'fails';
    const open = await decide([item({ ...POLICY, name: 'open' }, 'open')]);
    expect(open.items).toEqual([]);
    // What the request path tells onDecision (the metric was counted here already).
    const failOpen = { key: 'k', cost: 1, shadow: false, remaining: 2 };
    expect(open.failed).toEqual([{ policy: 'open', source: 'fail-open', ...failOpen }]);
    const refused = engine.decide([item({ ...POLICY, name: 'closed' }, 'closed')]);
    await expect(refused).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(refused).rejects.toMatchObject({
      retryAfterMs: 5000,
      failed: [{ policy: 'closed', source: 'fail-closed', key: 'k', cost: 1, shadow: false, remaining: 0 }],
    });
    expect(counted).toEqual([
      ['open', 'failed-open', 'fail-open'],
      ['closed', 'failed-closed', 'fail-closed'],
    ]);
  });
});

// The fail modes' decisions reach onDecision through the request path (lib/limiter/step-evaluation.ts): one app
// on a store that can fail, a route per path that sets 'fail-open' or 'fail-closed'.

const byIp = (name: string, failMode: FailMode, extra: Partial<RateLimitPolicy> = {}): RateLimitPolicy =>
  ({ name, algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip', failMode, ...extra }) as RateLimitPolicy;
const throws = (): string => {
  throw new Error('no identity');
};

@Controller()
class FailingController {
  @Get('open')
  @RateLimit(byIp('open', 'open'))
  open() {
    return 'ok';
  }

  @Get('closed')
  @RateLimit([byIp('open', 'open'), byIp('closed', 'closed'), byIp('local', 'local')])
  closed() {
    return 'ok';
  }

  @Get('key-open')
  @RateLimit([byIp('key-open', 'open', { key: throws }), byIp('key-local', 'local', { key: throws })])
  keyOpen() {
    return 'ok';
  }

  @Get('key-closed')
  @RateLimit(byIp('key-closed', 'closed', { key: throws }))
  keyClosed() {
    return 'ok';
  }

  @Get('list-closed')
  @RateLimit(byIp('list-closed', 'closed', { allow: [throws as unknown as () => boolean] }))
  listClosed() {
    return 'ok';
  }
}

describe("'fail-open' and 'fail-closed' on onDecision, per path", () => {
  let app: INestApplication;
  let store: FailingStore;
  let events: RateLimitDecisionEvent[];
  beforeEach(async () => {
    events = [];
    const clock = new FakeClock(1_700_000_000_000);
    store = new FailingStore(new MemoryRateLimitStore({ clock }));
    ({ app } = await createApp(
      'express',
      {
        imports: [
          RateLimitModule.forRoot({
            store,
            timeout: 2_000,
            onError: () => undefined,
            onDecision: (e) => events.push(e),
          }),
        ],
        controllers: [FailingController],
      },
      clock,
    ));
  });
  afterEach(() => app.close());

  /** What onDecision was told: [policy, source, allowed, key, cost, remaining, retryAfterMs] */
  const told = () => events.map((e) => [e.policy, e.source, e.allowed, e.key, e.cost, e.remaining, e.retryAfterMs]);

  it("the store failed, the policy fails open: 'fail-open', allowed, nothing counted", async () => {
    store.health = 'fails';
    expect((await request(app.getHttpServer()).get('/open')).status).toBe(200);
    expect(told()).toEqual([['open', 'fail-open', true, 'ip:127.0.0.1', 1, 5, 0]]);
    expect(events[0]?.context).toBeDefined();
  });

  it("the store failed, a policy fails closed: 'fail-closed' with the 503's wait; its fail-open sibling 'fail-open'", async () => {
    store.health = 'fails';
    const res = await request(app.getHttpServer()).get('/closed');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    // The 'local' policy was never decided (the refusal came first): no event for it.
    expect(told()).toEqual([
      ['open', 'fail-open', true, 'ip:127.0.0.1', 1, 5, 0],
      ['closed', 'fail-closed', false, 'ip:127.0.0.1', 1, 0, 2_000],
    ]);
  });

  it("a key function threw: 'fail-open' for an open and for a local policy, key '' and cost 0", async () => {
    expect((await request(app.getHttpServer()).get('/key-open')).status).toBe(200);
    expect(told()).toEqual([
      ['key-open', 'fail-open', true, '', 0, 5, 0],
      ['key-local', 'fail-open', true, '', 0, 5, 0],
    ]);
  });

  it("a key function threw, the policy fails closed: 'fail-closed', refused", async () => {
    const res = await request(app.getHttpServer()).get('/key-closed');
    expect(res.status).toBe(503);
    expect(told()).toEqual([['key-closed', 'fail-closed', false, '', 0, 0, 2_000]]);
  });

  it("a list function threw, the policy fails closed: 'fail-closed', refused", async () => {
    const res = await request(app.getHttpServer()).get('/list-closed');
    expect(res.status).toBe(503);
    expect(told()).toEqual([['list-closed', 'fail-closed', false, '', 0, 0, 2_000]]);
  });
});
