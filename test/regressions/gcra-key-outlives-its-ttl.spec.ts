import { Redis } from 'ioredis';

import type { RateLimitPolicy } from '../../lib/index.js';
import { storeOptions, storeServers } from '../support/store-options.js';
import { versionOf } from '../support/versioned-apps.js';

// Regression (issue 41, finding 3): a GCRA key written under a 1 s window kept a TTL cut to its 1 s epoch after a
// deploy changed the window to 10 s under the same name, while the new TAT was 10 s ahead: the key expired early
// and about 10 s of emissions were admitted again, once per deploy. Now the new version keeps its state in a key
// of its own shape, whose TTL it sets: every key outlives the TAT it holds.

const before: RateLimitPolicy = { name: 'gcra-deploy', algorithm: 'gcra', limit: 10, window: '1s', key: 'ip' };
const after: RateLimitPolicy = { ...before, window: '10s' };

describe('a GCRA policy whose window grows in a deploy, on Redis', () => {
  const servers = storeServers();

  it('leaves no key that expires before the TAT it holds', async () => {
    const options = storeOptions('redis', servers);
    const old = await versionOf(before, options);
    const now = await versionOf(after, options, old.clock);
    const admin = new Redis(servers.redis.url);
    try {
      expect((await old.times(11)).map((a) => a.status)).toEqual([...Array(10).fill(200), 429]);
      expect((await now.times(11)).map((a) => a.status)).toEqual([...Array(10).fill(200), 429]);
      // The two versions' keys of the one client (a hash tag each), beside the policies they recorded.
      const all = await admin.keys(`${options.keyPrefix}*`);
      expect(all.filter((key) => !key.includes('{'))).toEqual([`${options.keyPrefix}policies`]);
      const keys = all.filter((key) => key.includes('{'));
      expect(keys).toHaveLength(2);
      for (const key of keys) {
        const tatMs = Number(await admin.get(key)) / 1000;
        const leadMs = tatMs - now.clock.now();
        // Redis counts a TTL in real time: a second's margin for the test's own requests
        expect(await admin.pttl(key)).toBeGreaterThan(leadMs - 1000);
      }
    } finally {
      admin.disconnect();
      await Promise.all([old.app.close(), now.app.close()]);
    }
  });
});
