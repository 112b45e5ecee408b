import { OverlongWaits } from '../../lib/engine/overlong-waits.js';
import { validatePolicy } from '../../lib/index.js';
import type { RateLimitMetrics } from '../../lib/metrics/otel-metrics.js';
import { MAX_CLOCK_SKEW_MS, maxWaitMs } from '../../lib/policy/max-wait.js';
import { ALGORITHMS } from '../../lib/policy/policy.types.js';
import { shapeTag } from '../../lib/policy/state-shape.js';
import { overlongWait, toDecision } from '../../lib/stores/decisions.js';
import { CapturingLogger } from '../support/log-lines.js';
import { policyOf } from '../support/policies.js';

// Issue 41: what a policy's stored state is kept under, and the longest wait any answer may ask.

describe('the shape of a policy’s state', () => {
  it.each([
    [{ algorithm: 'fixed-window', window: '1m' }, 'fw1m'],
    [{ algorithm: 'fixed-window', window: 1500, anchor: 'first-request' }, 'fwf1500ms'],
    [{ algorithm: 'sliding-window-log', window: '15m' }, 'swl15m'],
    [{ algorithm: 'sliding-window-counter', window: 90_000 }, 'swc90s'],
    [{ algorithm: 'token-bucket', window: '1h' }, 'tb1h'],
    [{ algorithm: 'gcra', window: '1d' }, 'gcra1d'],
    [{ algorithm: 'concurrency', window: '5m' }, 'cc5m'],
    [{ algorithm: 'quota', period: 'day' }, 'qd'],
    [{ algorithm: 'quota', period: 'month', timeZone: 'Europe/Paris' }, 'qm-Europe/Paris'],
  ] as const)('%j is tagged %s', (fields, tag) => {
    const policy = validatePolicy({ name: 'p', limit: 10, ...fields } as Parameters<typeof validatePolicy>[0]);
    expect(shapeTag({ ...policy, anchor: policy.anchor })).toBe(tag);
    expect(policy.shape).toBe(tag);
    expect(policy.id).toBe('p');
  });

  it('keeps the shape under a change of limit or burst, and changes it under a change of window or algorithm', () => {
    const shape = (fields: object) =>
      validatePolicy({ name: 'p', algorithm: 'gcra', limit: 10, window: '1m', ...fields }).shape;
    expect(shape({ limit: 20, burst: 5 })).toBe(shape({}));
    expect(shape({ algorithm: 'token-bucket' })).not.toBe(shape({}));
    expect(shape({ window: '61s' })).not.toBe(shape({}));
    expect(shape({ algorithm: 'fixed-window' })).not.toBe(shape({}));
  });
});

describe('the longest wait of a policy', () => {
  const windowMs = 60_000;
  it.each(ALGORITHMS)('%s: bounds a decision’s wait and reset, and remembers what the store asked', (algorithm) => {
    const policy = validatePolicy(policyOf(algorithm, { name: 'p', limit: 10, window: windowMs, period: 'day' }));
    const longest = maxWaitMs(policy);
    expect(longest).toBeGreaterThanOrEqual(algorithm === 'quota' ? 86_400_000 : windowMs);
    const asked = longest + 123_456_789;
    const decision = toDecision(policy, { allowed: false, remaining: 0, resetMs: asked, retryAfterMs: asked }, 1);
    expect(decision).toMatchObject({ retryAfterMs: longest, resetMs: longest });
    expect(overlongWait(decision)).toBe(asked);
    const within = toDecision(policy, { allowed: false, remaining: 0, resetMs: 5, retryAfterMs: 5 }, 1);
    expect(within).toMatchObject({ retryAfterMs: 5, resetMs: 5 });
    expect(overlongWait(within)).toBeUndefined();
  });

  it('leaves a cost that never fits without a wait, and counts a block in', () => {
    const policy = validatePolicy({ name: 'p', algorithm: 'fixed-window', limit: 10, window: '1m', block: '1h' });
    expect(maxWaitMs(policy)).toBe(3_600_000);
    const never = toDecision(policy, { allowed: false, remaining: 10, resetMs: 0, retryAfterMs: Infinity }, 11);
    expect(never.retryAfterMs).toBe(Infinity);
  });

  it('is two bursts of emission intervals for a bucket (one burst, and the debt cap)', () => {
    const policy = validatePolicy({ name: 'p', algorithm: 'token-bucket', limit: 100, window: '1m', burst: 10 });
    expect(maxWaitMs(policy)).toBe(2 * 10 * 600 + 1);
  });
});

describe('OverlongWaits', () => {
  const policy = validatePolicy({ name: 'skewed', algorithm: 'fixed-window', limit: 5, window: '10s' });
  const decided = (askedMs: number) =>
    toDecision(policy, { allowed: false, remaining: 0, resetMs: askedMs, retryAfterMs: askedMs }, 1);

  it('counts each wait beyond the skew allowed, and warns once per policy', () => {
    const logger = new CapturingLogger();
    const counted: string[] = [];
    const metrics = { overlongWait: (p: string) => counted.push(p) } as unknown as RateLimitMetrics;
    const waits = new OverlongWaits(logger, () => metrics);
    waits.check([decided(10_000 + MAX_CLOCK_SKEW_MS)]); // within the skew: not reported
    waits.check([decided(40_000)]);
    waits.check([decided(40_000)]);
    expect(counted).toEqual(['skewed', 'skewed']);
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toContain('policy skewed: the store asked for a wait of 40000 ms');
  });
});
