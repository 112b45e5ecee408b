import type { ExecutionContext } from '@nestjs/common';

import {
  DecisionEngine,
  type EngineItem,
  type Evaluation,
  sourceAt,
  StoreUnavailable,
} from '../../lib/engine/decision-engine.js';
import { failModesDoing } from '../../lib/engine/failure-reporter.js';
import type { RateLimitMetricOutcome, RateLimitMetrics } from '../../lib/metrics/otel-metrics.js';
import {
  ALGORITHMS,
  type FailMode,
  type RateLimitDecision,
  type RateLimitPolicy,
  type ResolvedPolicy,
} from '../../lib/policy/policy.types.js';
import { validatePolicy } from '../../lib/policy/validate-policy.js';
import { DecisionEvents } from '../../lib/limiter/decision-events.js';
import { OutcomeRefunds } from '../../lib/limiter/outcome.js';
import { MemoryRateLimitStore } from '../../lib/stores/memory/memory.store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { FailingStore, type StoreHealth } from '../support/failing-store.js';
import { CapturingLogger, CapturingNestLogger } from '../support/log-lines.js';
import { policyOf } from '../support/policies.js';
import { waitFor } from '../support/wait.js';
import { TEST_START_MS } from '../support/time.js';

// failMode 'local' on the decision engine: a real MemoryRateLimitStore behind a switch (FailingStore) is the
// shared store; when it fails or hangs, 'local' policies are decided on the engine's own in-process store with
// their local limit. Time is a fake clock; only the store's timeout and the breaker's probe run on real timers,
// and no assertion depends on how long anything took.

const WINDOW_MS = 60_000;

function setup({ instances = 2, timeoutMs = 20 }: { instances?: number; timeoutMs?: number } = {}) {
  const clock = new FakeClock(TEST_START_MS);
  const store = new FailingStore(new MemoryRateLimitStore({ clock }));
  const logger = new CapturingLogger();
  const engine = new DecisionEngine({
    stores: { rates: store, quotas: store, owned: [] },
    clock,
    timeoutMs,
    instances,
    logger,
  });
  const outcomes: [string, RateLimitMetricOutcome][] = [];
  const metrics: RateLimitMetrics = {
    decision: (policy, outcome) => outcomes.push([policy, outcome]),
    storeCall: () => undefined,
    slots: () => undefined,
    overlongWait: () => undefined,
    shed: () => undefined,
  };
  engine.metrics = metrics;
  return { clock, store, engine, logger, outcomes };
}
type Setup = ReturnType<typeof setup>;

let current: Setup | undefined;
afterEach(async () => {
  await current?.engine.dispose();
  current = undefined;
});
function start(options?: Parameters<typeof setup>[0]): Setup {
  current = setup(options);
  return current;
}

function item(policy: RateLimitPolicy | ResolvedPolicy, failMode: FailMode, key = 'k', cost = 1): EngineItem {
  const resolved = 'source' in policy ? policy : validatePolicy(policy);
  return { policy: resolved, key, cost, failMode, order: 0 };
}

const allowed = (e: Evaluation): boolean => e.decisions.length > 0 && e.decisions.every((d) => d.allowed);

/** Decides `items` `n` times and counts the requests admitted (all of their decided items allowed). */
async function admitted(engine: DecisionEngine, items: readonly EngineItem[], n: number): Promise<number> {
  let count = 0;
  for (let i = 0; i < n; i++) if (allowed(await engine.decide(items))) count++;
  return count;
}

describe("failMode 'local'", () => {
  const api = { name: 'api', algorithm: 'fixed-window', limit: 10, window: WINDOW_MS } as const;

  it.each<StoreHealth>(['fails', 'hangs'])(
    'store %s: admits exactly ceil(limit / instances) per window, with the local limit in its decisions',
    async (health) => {
      const { clock, store, engine } = start({ instances: 3 });
      const items = [item(api, 'local')];
      expect(await admitted(engine, items, 4)).toBe(4); // the store decides: 4 of its 10
      store.health = health;
      const decisions = [];
      for (let i = 0; i < 6; i++) decisions.push((await engine.decide(items)).decisions[0]);
      // ceil(10 / 3) = 4 in this process, whatever the store had counted
      expect(decisions.map((d) => d?.allowed)).toEqual([true, true, true, true, false, false]);
      expect(decisions.map((d) => d?.limit)).toEqual([4, 4, 4, 4, 4, 4]);
      expect(decisions.map((d) => d?.remaining)).toEqual([3, 2, 1, 0, 0, 0]);
      clock.advance(WINDOW_MS);
      expect(await admitted(engine, items, 6)).toBe(4);
    },
  );

  it('an explicit localLimit wins over the default; a per-request limit scales the default', async () => {
    const { store, engine } = start({ instances: 4 });
    store.health = 'fails';
    expect(await admitted(engine, [item({ ...api, name: 'own', localLimit: 7 }, 'local')], 10)).toBe(7);
    const planned = validatePolicy({ ...api, name: 'plan' });
    // the caller's plan gives 100: ceil(100 / 4) = 25 here
    expect(await admitted(engine, [item(engine.withLimit(planned, 100), 'local', 'pro')], 30)).toBe(25);
    // the plan's limit is the most a process admits alone, even under a larger localLimit
    const capped = validatePolicy({ ...api, name: 'capped', limit: () => 1, localLimit: 3 } as RateLimitPolicy);
    expect(await admitted(engine, [item(engine.withLimit(capped, 2), 'local')], 5)).toBe(2);
  });

  it.each(ALGORITHMS)('%s: a fresh key gets exactly its local limit while the store fails', async (algorithm) => {
    const { store, engine } = start({ instances: 2 });
    store.health = 'fails';
    const policy = policyOf(algorithm, { name: algorithm, limit: 9, window: WINDOW_MS, failMode: 'local' });
    // ceil(9 / 2) = 5: five in one window (quota: period), five leases held at once (concurrency)
    expect(await admitted(engine, [item(policy, 'local')], 8)).toBe(5);
  });

  it.each(['token-bucket', 'gcra'] as const)('%s: the burst is scaled like the limit', async (algorithm) => {
    const { store, engine } = start({ instances: 4 });
    store.health = 'fails';
    // limit 8 -> 2 here; burst 20 -> ceil(20 × 2 / 8) = 5 at once, then the local rate
    const policy = { name: 'b', algorithm, limit: 8, burst: 20, window: WINDOW_MS, failMode: 'local' } as const;
    const evaluation = await engine.decide([item(policy, 'local')]);
    expect(evaluation.decisions[0]?.limit).toBe(5);
    expect((await admitted(engine, [item(policy, 'local')], 10)) + 1).toBe(5);
  });

  it('all-or-nothing with the other local items; open ones left out; closed wins with 503, consuming nothing', async () => {
    const { store, engine, outcomes } = start({ instances: 2 });
    store.health = 'fails';
    const wide = item({ name: 'wide', algorithm: 'sliding-window-log', limit: 20, window: WINDOW_MS }, 'local');
    const narrow = item({ name: 'narrow', algorithm: 'fixed-window', limit: 4, window: WINDOW_MS }, 'local');
    const open = item({ name: 'open', algorithm: 'gcra', limit: 1, window: WINDOW_MS }, 'open');
    const both = [wide, narrow, open];
    const first = await engine.decide(both);
    // the open item is left out of the decision; the two local ones decided together
    expect(first.items.map((i) => i.policy.name)).toEqual(['wide', 'narrow']);
    expect(await admitted(engine, both, 5)).toBe(1); // narrow's 2 are gone after two requests in all
    // narrow denied the request: wide consumed nothing for the denied ones (10 local, 2 used)
    expect(await admitted(engine, [wide], 20)).toBe(8);

    const closed = item({ name: 'closed', algorithm: 'gcra', limit: 100, window: WINDOW_MS }, 'closed');
    const other = item({ name: 'other', algorithm: 'fixed-window', limit: 4, window: WINDOW_MS }, 'local');
    await expect(engine.decide([other, closed])).rejects.toBeInstanceOf(StoreUnavailable);
    expect(await admitted(engine, [other], 5)).toBe(2); // the refused request took nothing locally
    expect(outcomes).toContainEqual(['other', 'failed-local']);
    expect(outcomes).toContainEqual(['open', 'failed-open']);
    expect(outcomes).toContainEqual(['closed', 'failed-closed']);
  });

  it('goes back to the store once it answers; what was counted locally is not carried back', async () => {
    const { store, engine } = start({ instances: 2 });
    const items = [item(api, 'local')];
    store.health = 'fails';
    expect(await admitted(engine, items, 8)).toBe(5);
    // five failures in a row opened the breaker: its probe (ping) closes it once the store answers
    expect(engine.breakerFor(store).isOpen).toBe(true);
    store.health = 'answers';
    await waitFor(() => !engine.breakerFor(store).isOpen, 'the breaker to close');
    const before = store.calls.consume;
    // the store's own count: 10 for this window, none of which the local decisions used
    expect(await admitted(engine, items, 12)).toBe(10);
    // each went to the store but the last, which the cache of the store's denial (the 11th) answered
    expect(store.calls.consume - before).toBe(11);
  });

  it('gives what it took locally back locally (a released lease, a compensation), never to the store', async () => {
    const { store, engine } = start({ instances: 2 });
    const uploads = { name: 'uploads', algorithm: 'concurrency', limit: 4, window: WINDOW_MS } as const;
    const lease = { ...item(uploads, 'local'), count: 'release' as const };
    store.health = 'fails';
    const taken = [await engine.decide([lease]), await engine.decide([lease])];
    expect(taken.every(allowed)).toBe(true);
    expect(allowed(await engine.decide([lease]))).toBe(false); // 2 in flight here: ceil(4 / 2)
    store.health = 'answers';
    for (const evaluation of taken) {
      const local = evaluation.items[0]?.policy as ResolvedPolicy;
      expect(engine.storeOf(local, sourceAt(evaluation, 0))).toBe(engine.local.store);
      await engine.compensate(evaluation);
    }
    expect(store.calls.refund).toBe(0);
    // both leases are back in this process's store: two fit there again
    const [peeked] = await engine.local.store.peek([{ policy: engine.local.policyOf(lease.policy), key: 'k' }]);
    expect(peeked?.remaining).toBe(2);
    // and the store's own leases were never touched: it decides its 4 as before
    await waitFor(() => !engine.breakerFor(store).isOpen, 'the breaker to close');
    let held = 0;
    for (let i = 0; i < 6; i++) if (allowed(await engine.decide([lease]))) held++;
    expect(held).toBe(4);
  });

  it("a charge made locally is refunded locally by its outcome (count: 'failed'), and counted once, as failed-local", async () => {
    const { store, engine, outcomes } = start({ instances: 2 });
    const logins = { name: 'logins', algorithm: 'sliding-window-log', limit: 6, window: WINDOW_MS } as const;
    const counted = { ...item(logins, 'local'), count: 'failed' as const };
    store.health = 'fails';
    const evaluation = await engine.decide([counted]);
    expect(allowed(evaluation)).toBe(true);
    // the request is reported as decided: its metric was counted when the store failed, not again
    const events = new DecisionEvents(new CapturingNestLogger(), undefined);
    events.metrics = engine.metrics;
    // as the request path's conclusion reports it: with where it was decided
    expect(sourceAt(evaluation, 0)).toBe('local');
    events.report(
      [[evaluation.items[0] as EngineItem, evaluation.decisions[0] as RateLimitDecision, sourceAt(evaluation, 0)]],
      undefined,
    );
    expect(outcomes).toEqual([['logins', 'failed-local']]);

    store.health = 'answers';
    const refunds = new OutcomeRefunds(engine);
    refunds.settle([{ evaluation, atMs: engine.now() }], { status: 200, context: {} as ExecutionContext });
    await refunds.settled();
    expect(store.calls.refund).toBe(0);
    const [local] = await engine.local.store.peek([{ policy: engine.local.policyOf(counted.policy), key: 'k' }]);
    expect(local?.remaining).toBe(3); // all of ceil(6 / 2) back
  });

  it("the outage log says what the local limits are; a policy error of a 'local' policy leaves it out", async () => {
    const { store, engine, logger, outcomes } = start({ instances: 2 });
    store.health = 'fails';
    await engine.decide([item(api, 'local'), item({ ...api, name: 'open' }, 'open')]);
    expect(
      logger.find('error', /fail local \(api: 5\): decided in this process on the local limits; the fail-open/),
    ).toHaveLength(1);
    expect(failModesDoing([{ policy: { name: 'a' }, failMode: 'local' }], () => 3)).toBe(
      'fail local (a: 3): decided in this process on the local limits',
    );
    outcomes.length = 0;
    await engine.failed([{ item: { policy: validatePolicy(api), failMode: 'local' }, error: new Error('key') }], {
      items: [],
      decisions: [],
    });
    expect(outcomes).toEqual([['api', 'failed-open']]);
  });
});

describe('localLimit and instances are checked at start', () => {
  const base = { name: 'p', algorithm: 'fixed-window', limit: 10, window: '1m' } as const;

  it.each<[string, unknown, RegExp]>([
    ['not an integer', 2.5, /field "localLimit": must be an integer >= 1, got 2.5/],
    ['zero', 0, /must be an integer >= 1, got 0/],
    ['a string', '3', /got "3" \(a string: use Number\(...\)\)/],
    ['over the limit', 11, /must not exceed limit \(10\), got 11/],
  ])('localLimit %s', (_, localLimit, message) => {
    expect(() => validatePolicy({ ...base, failMode: 'local', localLimit } as RateLimitPolicy, 'Api.get')).toThrow(
      message,
    );
  });

  it("localLimit beside failMode 'open' or 'closed' is an error naming where it is declared", () => {
    expect(() => validatePolicy({ ...base, failMode: 'closed', localLimit: 3 }, 'Api.get')).toThrow(
      `Invalid rate-limit policy "p" (declared on Api.get), field "localLimit": applies only with failMode 'local', ` +
        "and this policy's failMode is 'closed'",
    );
  });

  it('quotas take a localLimit too', () => {
    const quota = validatePolicy({ name: 'q', algorithm: 'quota', period: 'day', limit: 100, localLimit: 10 });
    expect(quota.localLimit).toBe(10);
  });

  it("failMode accepts 'local' and says so when given something else", () => {
    expect(validatePolicy({ ...base, failMode: 'local' }).failMode).toBe('local');
    expect(() => validatePolicy({ ...base, failMode: 'lokal' } as unknown as RateLimitPolicy)).toThrow(
      "must be 'open', 'closed' or 'local', got \"lokal\"",
    );
  });
});
