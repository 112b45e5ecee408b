import { FakeClock } from '../../lib/testing/index.js';
import { MAX_CLOCK_SKEW_MS } from '../../lib/policy/max-wait.js';
import type { RateLimitPolicy } from '../../lib/index.js';
import { CapturingLogger } from '../support/log-lines.js';
import { storeOptions, storeServers } from '../support/store-options.js';
import { alignedStart } from '../support/time.js';
import { versionOf } from '../support/versioned-apps.js';

// Regression (issue 41, finding 2): an instance whose clock ran 30 s ahead shared a 10 s fixed window with one on
// the true clock; the true-clock instance counted its requests against the newest window the store had seen (as
// it must), and answered 429 with Retry-After: 40, four windows. Now no answer asks for more than the policy's
// own longest wait (a window), and a stored window that far ahead is reported once, naming the policy.

const WINDOW_MS = 10_000;
const policy: RateLimitPolicy = { name: 'skewed', algorithm: 'fixed-window', limit: 5, window: WINDOW_MS, key: 'ip' };

describe.each(['redis', 'postgres'] as const)('an instance 30 s ahead shares a 10 s window, on %s', (store) => {
  const servers = storeServers();

  it('the instance on the true clock never asks for more than a window, and says once what it saw', async () => {
    const options = storeOptions(store, servers);
    const start = alignedStart(WINDOW_MS) + 1_000;
    const logger = new CapturingLogger();
    const ahead = await versionOf(policy, options, new FakeClock(start + 30_000));
    const onTime = await versionOf(policy, options, new FakeClock(start), logger);
    try {
      expect((await ahead.times(5)).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      const answers = await onTime.times(3);
      expect(answers.map((a) => a.status)).toEqual([429, 429, 429]);
      for (const { retryAfter } of answers) expect(retryAfter).toBe(WINDOW_MS / 1000);
      const said = logger.find('warn', /policy skewed: the store asked for a wait of \d+ ms, longer than/);
      expect(said).toHaveLength(1);
      expect(said[0]?.message).toContain(`${MAX_CLOCK_SKEW_MS} ms of clock skew allowed`);
    } finally {
      await Promise.all([ahead.app.close(), onTime.app.close()]);
    }
  });

  it('a clock ahead by less than the skew allowed is answered bounded, and not reported', async () => {
    const options = storeOptions(store, servers);
    const start = alignedStart(WINDOW_MS) + WINDOW_MS - 500;
    const logger = new CapturingLogger();
    const ahead = await versionOf(policy, options, new FakeClock(start + 1_000));
    const onTime = await versionOf(policy, options, new FakeClock(start), logger);
    try {
      expect((await ahead.times(5)).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      // the window ahead ends 10.5 s from this clock: answered with the window
      expect(await onTime.get()).toEqual({ status: 429, retryAfter: WINDOW_MS / 1000 });
      expect(logger.find('warn', /the store asked for a wait/)).toHaveLength(0);
    } finally {
      await Promise.all([ahead.app.close(), onTime.app.close()]);
    }
  });
});
