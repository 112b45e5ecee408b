import { Redis } from 'ioredis';

import type { RateLimitPolicy } from '../../lib/index.js';
import { storeOptions, storeServers } from '../support/store-options.js';
import { versionOf } from '../support/versioned-apps.js';
import { waitFor } from '../support/wait.js';

// Regression (issue 41, finding 8): after `redis-cli FLUSHALL`, an instance kept answering 429 from its cache of
// denials for the rest of the cached Retry-After (an hour), while RateLimitService.peek said the budget was
// full: the feed of changes announces only what goes through the module. Now a cached denial answers for at
// most `denyCacheMs` (default 1 s; 50 ms here, so that the test waits little for the real time it counts in).

const policy: RateLimitPolicy = { name: 'hourly', algorithm: 'fixed-window', limit: 2, window: '1h', key: 'ip' };

describe("an operator's FLUSHALL, on Redis", () => {
  const servers = storeServers();

  it('reaches the cache of denials within denyCacheMs', async () => {
    const app = await versionOf(policy, { ...storeOptions('redis', servers), denyCacheMs: 50 });
    const admin = new Redis(servers.redis.url);
    try {
      const denied = await app.times(4);
      expect(denied.map((a) => a.status)).toEqual([200, 200, 429, 429]);
      expect(denied[3]?.retryAfter).toBeGreaterThan(60); // the rest of the hour
      await admin.flushall();
      await waitFor(async () => (await app.get()).status === 200, 'an admission once the cached denial lapsed');
    } finally {
      admin.disconnect();
      await app.app.close();
    }
  });

  // On the memory store: a start that fails leaves no connection of the module's to close.
  it('rejects a denyCacheMs that is not an integer >= 0, naming the option', async () => {
    await expect(versionOf(policy, { ...storeOptions('memory', servers), denyCacheMs: -1 })).rejects.toThrow(
      'option "denyCacheMs" must be an integer >= 0 (ms; 0 asks the store every time), got -1',
    );
  });
});
