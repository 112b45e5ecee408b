import { type RateLimitDuration, type RateLimitPolicy, validatePolicy } from '../../lib/index.js';
import { maxWaitMs } from '../../lib/policy/max-wait.js';
import { storeOptions, storeServers } from '../support/store-options.js';
import { versionOf } from '../support/versioned-apps.js';

// Regression (issue 41, finding 1): a deploy that changed a policy's window under the same name made the new
// version read the old key's window index as a window thousands of years ahead: fixed window 1 s → 60 s
// answered 429 with Retry-After 105999421064, fixed window → GCRA 62 years, GCRA → fixed window 1,572 years;
// the cache of denials repeated it after the key expired. Now a policy's state is kept under the tag of its
// shape (lib/policy/state-shape.ts): the new version starts from empty state, and the old one keeps its own.

const NAME = 'api';
const fw = (window: RateLimitDuration, extra: Partial<RateLimitPolicy> = {}): RateLimitPolicy =>
  ({ name: NAME, algorithm: 'fixed-window', limit: 5, window, key: 'ip', ...extra }) as RateLimitPolicy;
const bucket = (algorithm: 'gcra' | 'token-bucket', window: RateLimitDuration): RateLimitPolicy => ({
  name: NAME,
  algorithm,
  limit: 5,
  window,
  key: 'ip',
});
const gcra = (window: RateLimitDuration): RateLimitPolicy => bucket('gcra', window);

const DEPLOYS: [string, RateLimitPolicy, RateLimitPolicy][] = [
  ['fixed window 1 s → 60 s', fw('1s'), fw('60s')],
  ['fixed window 60 s → 61 s', fw('60s'), fw('61s')],
  ['fixed window → GCRA', fw('1m'), gcra('1m')],
  ['GCRA → fixed window', gcra('1m'), fw('1m')],
  ['GCRA 1 s → 1 m', gcra('1s'), gcra('1m')],
  ['token bucket 1 m → GCRA 1 h', bucket('token-bucket', '1m'), gcra('1h')],
  ["anchor 'clock' → 'first-request'", fw('1m'), fw('1m', { anchor: 'first-request' })],
];

/** The longest Retry-After `policy` may ever answer, in whole seconds. */
const longest = (policy: RateLimitPolicy): number => Math.ceil(maxWaitMs(validatePolicy(policy)) / 1000);

// The memory store is one process's: a deploy starts it empty, so only the shared stores carry state across.
describe.each(['redis', 'postgres'] as const)('a deploy that changes the shape of a policy, on %s', (store) => {
  const servers = storeServers();

  it.each(DEPLOYS)(
    '%s: the new version decides from empty state, the old one from its own',
    async (_, before, after) => {
      const options = storeOptions(store, servers);
      const old = await versionOf(before, options);
      const now = await versionOf(after, options);
      try {
        const oldAnswers = await old.times(6);
        expect(oldAnswers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429]);

        const newAnswers = await now.times(6);
        expect(newAnswers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429]);
        expect(newAnswers[5]?.retryAfter).toBeLessThanOrEqual(longest(after));

        // Side by side (a rolling deploy): the old version still counts its own state, and restarts nothing.
        const again = await old.get();
        expect(again.status).toBe(429);
        expect(again.retryAfter).toBeLessThanOrEqual(longest(before));
      } finally {
        await Promise.all([old.app.close(), now.app.close()]);
      }
    },
  );
});
