import { Logger } from '@nestjs/common';

import { MemoryRateLimitStore, validatePolicy, type RateLimitPolicy } from '../../lib/index.js';
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

  it("'fail-open' and 'fail-closed': no store decided; the metric says which fail mode did", async () => {
    const { decide, counted, store, engine } = start();
    store.health = 'fails';
    const open = await decide([item({ ...POLICY, name: 'open' }, 'open')]);
    expect(open.items).toEqual([]);
    await expect(engine.decide([item({ ...POLICY, name: 'closed' }, 'closed')])).rejects.toBeInstanceOf(
      StoreUnavailable,
    );
    expect(counted).toEqual([
      ['open', 'failed-open', 'fail-open'],
      ['closed', 'failed-closed', 'fail-closed'],
    ]);
  });
});
