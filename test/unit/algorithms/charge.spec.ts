import { ALGORITHM_STEPS } from '../../../lib/algorithms/index.js';
import { MAX_CHARGED_UNITS } from '../../../lib/algorithms/algorithm.js';
import { quotaPeriodAt } from '../../../lib/algorithms/quota/quota-period.js';
import { MAX_TAKEN } from '../../../lib/algorithms/token-bucket/token-bucket.js';
import { validatePolicy } from '../../../lib/index.js';
import { MAX_LEAD_US } from '../../../lib/policy/emission.js';
import { maxWaitMs } from '../../../lib/policy/max-wait.js';
import type { RateLimitPolicy } from '../../../lib/policy/policy.types.js';
import { limiter } from '../../support/harness.js';
import { alignedStart, TEST_START_MS } from '../../support/time.js';

const MINUTE = 60_000;
const minuteStart = alignedStart(MINUTE) + MINUTE;

/**
 * A charge past the limit is a debt: the next consume is denied, for exactly `waitMs` (denied at waitMs − 1,
 * allowed at waitMs), with nothing remaining meanwhile.
 */
async function expectDebt(l: ReturnType<typeof limiter>, waitMs: number): Promise<void> {
  const denied = await l.consume();
  expect(denied).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: waitMs });
  expect(await l.peek()).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: waitMs });
  l.clock.advance(waitMs - 1);
  expect(await l.consume()).toMatchObject({ allowed: false, retryAfterMs: 1 });
  l.clock.advance(1);
  expect((await l.consume()).allowed).toBe(true);
}

describe('charge: units taken without deciding, past the limit', () => {
  it('fixed window: the window is spent until it ends, however far past the limit', async () => {
    const l = limiter({ algorithm: 'fixed-window', limit: 10, window: '1m' }, minuteStart + 10_000);
    await l.consume(4);
    expect(await l.charge(10)).toMatchObject({ allowed: false, remaining: 0, resetMs: 50_000, retryAfterMs: 50_000 });
    await expectDebt(l, 50_000);
    // the next window starts empty: the debt was this window's
    expect((await l.peek()).remaining).toBe(9);
  });

  it('fixed window from the first request: a charge on an empty key starts its window', async () => {
    const l = limiter({ algorithm: 'fixed-window', anchor: 'first-request', limit: 5, window: '1m' });
    expect(await l.charge(7)).toMatchObject({ allowed: false, remaining: 0, resetMs: MINUTE });
    l.clock.advance(1000);
    await expectDebt(l, MINUTE - 1000);
  });

  it('token bucket: taken passes the capacity and drains at the limit', async () => {
    const l = limiter({ algorithm: 'token-bucket', limit: 10, window: '1s' });
    await l.consume(10);
    // 15 taken of 10: 6 must drain (100 ms each) before one more fits
    expect(await l.charge(5)).toMatchObject({ allowed: false, remaining: 0, resetMs: 1500, retryAfterMs: 600 });
    await expectDebt(l, 600);
  });

  it('GCRA: the TAT moves ahead by amount × T past the burst', async () => {
    const l = limiter({ algorithm: 'gcra', limit: 10, window: '1s' });
    await l.consume(10);
    expect(await l.charge(5)).toMatchObject({ allowed: false, remaining: 0, resetMs: 1500, retryAfterMs: 600 });
    await expectDebt(l, 600);
  });

  it('GCRA per plan: a key still counting is charged at the limit it was written with', async () => {
    const policy = validatePolicy({ name: 'plan', algorithm: 'gcra', limit: () => 10, window: '1s' });
    const gcraPerPlan = ALGORITHM_STEPS['gcra-per-plan'];
    const at = { ...policy, limit: 10, capacity: 10 };
    const state = gcraPerPlan.step(undefined, at, TEST_START_MS, 4).state;
    // the plan changes to 20 a second: the 3 charged take the interval of 10 a second (100 ms each)
    const charged = gcraPerPlan.charge(state, { ...policy, limit: 20, capacity: 20 }, TEST_START_MS, 3);
    expect(charged).toEqual({ tatUs: (TEST_START_MS + 700) * 1000, limit: 10 });
    // a lapsed key is charged at the plan of now
    const lapsed = gcraPerPlan.charge(state, { ...policy, limit: 20, capacity: 20 }, TEST_START_MS + 5000, 3);
    expect(lapsed).toEqual({ tatUs: (TEST_START_MS + 5150) * 1000, limit: 20 });
  });

  it('sliding window counter: the estimate stays past the limit until the window has decayed', async () => {
    const l = limiter({ algorithm: 'sliding-window-counter', limit: 10, window: '1m' }, minuteStart);
    await l.consume(4);
    await l.charge(10);
    // 14 in this window: in the next, 14 × (1 − elapsed / 1m) + 1 <= 10 from elapsed = 1m − floor(9 × 1m / 14)
    await expectDebt(l, MINUTE + MINUTE - Math.floor((9 * MINUTE) / 14));
  });

  it('sliding window log: an entry of the amount at now, waited out as it leaves the window', async () => {
    const l = limiter({ algorithm: 'sliding-window-log', limit: 10, window: '1m' });
    await l.consume(4);
    l.clock.advance(10_000);
    await l.charge(10);
    // 14 logged: one more fits once the entry of 10 has left, a minute after it was logged
    await expectDebt(l, MINUTE);
  });

  it('quota: used passes the limit, and the period is spent until it ends', async () => {
    const policy: RateLimitPolicy = { algorithm: 'quota', period: 'day', timeZone: 'UTC', limit: 100 };
    const l = limiter(policy);
    const { endMs } = quotaPeriodAt('day', 'UTC', TEST_START_MS);
    await l.consume(90);
    expect(await l.charge(30)).toMatchObject({ allowed: false, remaining: 0, resetMs: endMs - TEST_START_MS });
    await expectDebt(l, endMs - TEST_START_MS);
  });

  it('a key without state is charged from nothing', async () => {
    const l = limiter({ algorithm: 'token-bucket', limit: 10, window: '1s' });
    expect(await l.charge(12)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 300 });
    await expectDebt(l, 300);
  });

  it('a charge of 0 changes nothing', async () => {
    const l = limiter({ algorithm: 'sliding-window-log', limit: 10, window: '1m' });
    await l.consume(3);
    expect(await l.charge(0)).toMatchObject({ allowed: true, remaining: 7 });
  });

  it('a blocked key stays blocked, and the units charged count once the block ends', async () => {
    const l = limiter({ algorithm: 'fixed-window', limit: 10, window: '1m' }, minuteStart);
    await l.store.block([{ policy: l.policy, key: 'k' }], 5000);
    expect(await l.charge(12)).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 5000 });
    l.clock.advance(5000);
    expect(await l.consume()).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: MINUTE - 5000 });
  });

  it('a shadow item is not charged: it consumes nothing', async () => {
    const l = limiter({ algorithm: 'token-bucket', limit: 10, window: '1s' });
    const [decision] = await l.store.charge([{ policy: l.policy, key: 'k', cost: 50, shadow: true }]);
    expect(decision).toMatchObject({ allowed: true, remaining: 10 });
    expect(l.store.size).toBe(0);
  });

  it('a concurrency limit cannot be charged: refused, its slots as they were', async () => {
    const l = limiter({ name: 'uploads', algorithm: 'concurrency', limit: 2, window: '5m' });
    await l.consume();
    await expect(l.charge(3)).rejects.toThrow(/policy "uploads" is a concurrency limit, which cannot be charged/);
    expect((await l.peek()).remaining).toBe(1);
  });
});

describe('charge: bounded where the count would leave the exact integers', () => {
  const now = TEST_START_MS;
  const huge = Number.MAX_SAFE_INTEGER;

  it('GCRA clamps the lead at the debt cap (one burst owed past the burst), and keeps a lead already beyond', () => {
    const policy = validatePolicy({ algorithm: 'gcra', limit: 10, window: '1s' });
    const clamped = ALGORITHM_STEPS.gcra.charge(undefined, policy, now, huge);
    // (1 + DEBT_CAP_CAPACITIES) × 10 × 100 ms
    expect(clamped).toEqual({ tatUs: now * 1000 + 2_000_000 });
    expect(ALGORITHM_STEPS.gcra.charge(clamped, policy, now, 1)).toEqual(clamped);
    // seen from a clock 1 s behind, the lead is past the bound: it stays as it is
    expect(ALGORITHM_STEPS.gcra.charge(clamped, policy, now - 1000, 1)).toEqual(clamped);
    // the step still decides exactly: the whole lead, less the room of one, to wait, within maxWaitMs
    const step = ALGORITHM_STEPS.gcra.step(clamped, policy, now, 1);
    expect(step).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1100 });
    expect(step.retryAfterMs).toBeLessThanOrEqual(maxWaitMs(policy));
  });

  it('GCRA clamps the lead at MAX_LEAD_US where the debt cap lies beyond it', () => {
    const policy = validatePolicy({ algorithm: 'gcra', limit: 1, window: Math.floor(MAX_LEAD_US / 1000) });
    expect(ALGORITHM_STEPS.gcra.charge(undefined, policy, now, huge)).toEqual({ tatUs: now * 1000 + MAX_LEAD_US });
  });

  it('the token bucket clamps taken at the debt cap (one capacity owed past the capacity)', () => {
    const policy = validatePolicy({ algorithm: 'token-bucket', limit: 10, window: '1s' });
    const clamped = ALGORITHM_STEPS['token-bucket'].charge(undefined, policy, now, huge);
    // 20 tokens, in units of 1/1000 of a token
    expect(clamped).toEqual({ taken: 20_000, atMs: now, limit: 10 });
    expect(ALGORITHM_STEPS['token-bucket'].charge(clamped, policy, now, 1)).toEqual(clamped);
    const step = ALGORITHM_STEPS['token-bucket'].step(clamped, policy, now, 1);
    expect(step).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1100 });
    expect(step.retryAfterMs).toBeLessThanOrEqual(maxWaitMs(policy));
    // a capacity lowered since: what the key owes stays, a charge adds nothing
    const lowered = validatePolicy({ algorithm: 'token-bucket', limit: 5, window: '1s' });
    expect(ALGORITHM_STEPS['token-bucket'].charge(clamped, lowered, now, 1)).toEqual({
      taken: 20_000,
      atMs: now,
      limit: 5,
    });
  });

  it('the token bucket never takes past MAX_TAKEN: the largest capacity owes at most that', () => {
    const policy = validatePolicy({ algorithm: 'token-bucket', limit: 1, window: MAX_CHARGED_UNITS });
    const clamped = ALGORITHM_STEPS['token-bucket'].charge(undefined, policy, now, huge);
    expect(clamped).toEqual({ taken: MAX_TAKEN, atMs: now, limit: 1 });
  });

  it('the counters clamp at MAX_CHARGED_UNITS (the sliding window counter at it / windowMs)', () => {
    const fw = validatePolicy({ algorithm: 'fixed-window', limit: 10, window: '1s' });
    expect(ALGORITHM_STEPS['fixed-window'].charge(undefined, fw, now, huge)).toEqual({
      period: Math.floor(now / 1000),
      count: MAX_CHARGED_UNITS,
    });
    const swc = validatePolicy({ algorithm: 'sliding-window-counter', limit: 10, window: '1s' });
    expect(ALGORITHM_STEPS['sliding-window-counter'].charge(undefined, swc, now, huge)).toEqual({
      window: Math.floor(now / 1000),
      current: Math.floor(MAX_CHARGED_UNITS / 1000),
      previous: 0,
    });
    const swl = validatePolicy({ algorithm: 'sliding-window-log', limit: 10, window: '1s' });
    const log = ALGORITHM_STEPS['sliding-window-log'].charge([[now, 4]], swl, now + 1, huge);
    expect(log).toEqual([
      [now, 4],
      [now + 1, MAX_CHARGED_UNITS - 4],
    ]);
  });
});
