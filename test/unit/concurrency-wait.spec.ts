import { CONCURRENCY_RETRY_MS } from '../../lib/algorithms/concurrency/concurrency.js';
import { withConcurrencyWaits } from '../../lib/engine/slot-wait.js';
import type { RateLimitDecision } from '../../lib/policy/policy.types.js';
import { validatePolicy } from '../../lib/policy/validate-policy.js';

const leases = { policy: validatePolicy({ name: 'leases', algorithm: 'concurrency', limit: 1, window: '5m' }) };
const log = { policy: validatePolicy({ name: 'log', algorithm: 'sliding-window-log', limit: 1, window: '5m' }) };

const denial = (retryAfterMs: number, extra: Partial<RateLimitDecision> = {}): RateLimitDecision => ({
  allowed: false,
  policy: 'leases',
  limit: 1,
  remaining: 0,
  resetMs: 300_000,
  retryAfterMs,
  ...extra,
});

describe('withConcurrencyWaits', () => {
  it("cuts a concurrency denial's wait to CONCURRENCY_RETRY_MS, keeping the rest of the decision", () => {
    const stored = denial(300_000);
    const [capped] = withConcurrencyWaits([leases], [stored]);
    expect(capped).toEqual({ ...stored, retryAfterMs: CONCURRENCY_RETRY_MS });
    expect(stored.retryAfterMs).toBe(300_000); // a store may keep the objects it returns: never mutated
  });

  it('keeps a shorter wait (the oldest lease expires sooner) and returns the same array when nothing changes', () => {
    const decisions = [denial(400), { ...denial(0), allowed: true, remaining: 1 }];
    expect(withConcurrencyWaits([leases, leases], decisions)).toBe(decisions);
  });

  it('leaves blocks, costs that can never fit and other algorithms as the store said', () => {
    const blocked = denial(60_000, { blocked: true });
    const never = denial(Infinity);
    const other = { ...denial(300_000), policy: 'log' };
    expect(withConcurrencyWaits([leases, leases, log], [blocked, never, other])).toEqual([blocked, never, other]);
  });

  it('cuts the wait of a shadow concurrency item too: its decision says what the client would be told', () => {
    const shadowItem = { ...leases, shadow: true };
    const [capped] = withConcurrencyWaits([shadowItem], [denial(300_000)]);
    expect(capped?.retryAfterMs).toBe(CONCURRENCY_RETRY_MS);
  });
});
