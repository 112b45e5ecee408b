import { readFileSync } from 'node:fs';

import type { DenyCache } from '../../lib/engine/coherence/deny-cache.js';
import { ChangeFeed } from '../../lib/engine/coherence/invalidation-feed.js';
import type { Logger } from '../../lib/util/logger.js';
import { DENY_CACHE_TRUST_MS, type RateLimitStoreChanges } from '../../lib/stores/engine-store.js';

// Regression: when the feed of changes went down, the log said a cached denial answers "for at most 1 s", where
// the docs (and the cache) say 750 ms. Both now come from DENY_CACHE_TRUST_MS.

const docs = (page: string) => readFileSync(new URL(`../../docs/${page}`, import.meta.url), 'utf8');

describe('regression: the log and the docs give one bound for a cached denial', () => {
  it('logs the bound of DENY_CACHE_TRUST_MS when the feed of changes is lost', async () => {
    const warnings: string[] = [];
    const logger = { log: () => undefined, warn: (m: string) => warnings.push(m), error: () => undefined };
    const changes: Pick<RateLimitStoreChanges, 'listen'> = {
      listen: async (listener) => {
        listener.lost(new Error('connection reset'));
        return async () => undefined;
      },
    };
    const feed = new ChangeFeed(
      changes as RateLimitStoreChanges,
      { live: () => undefined } as unknown as DenyCache,
      100,
      logger as unknown as Logger,
    );
    await feed.start();
    expect(warnings).toEqual([
      `The feed of changes is down (connection reset): until it is back, a cached denial answers for at most ${DENY_CACHE_TRUST_MS} ms before the store is asked again`,
    ]);
  });

  it.each(['options.md', 'stores.md'])('docs/%s gives the same bound', (page) => {
    const bounds = [...docs(page).matchAll(/answers? for at most (\d+ m?s)/g)].map(([, bound]) => bound);
    expect(bounds.length).toBeGreaterThan(0);
    expect(new Set(bounds)).toEqual(new Set([`${DENY_CACHE_TRUST_MS} ms`]));
  });
});
