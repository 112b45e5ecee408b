import { type RateLimitDuration, RedisRateLimitStore, validatePolicy, type ResolvedPolicy } from '../../lib/index.js';
import { ALGORITHMS, type RateLimitAlgorithm } from '../../lib/policy/policy.types.js';
import type { EngineStoreItem } from '../../lib/stores/engine-store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { policyOf } from '../support/policies.js';
import { writesRun } from '../support/redis-commands.js';
import { redisForSpec } from '../support/redis-server.js';
import { TEST_START_MS } from '../support/time.js';

// Regression: a denied fixed-window or GCRA request counted first and took the count back (INCRBY, then DECRBY):
// two writes per denial, sent to every replica and to the AOF, where the other algorithms only read. 600
// denials over 300 keys made 1,198 writes. A denial now writes nothing but the block it starts, where its
// policy has one (one SET per denial that starts it: a block is the write a denial of such a policy is for).

const redis = redisForSpec();
const KEYS = Array.from({ length: 300 }, (_, i) => `client-${i}`);
let prefixes = 0;

/** The policy of `algorithm` that denies once 2 units are taken, and one that never denies here. */
const tight = (algorithm: RateLimitAlgorithm, block?: RateLimitDuration): ResolvedPolicy =>
  validatePolicy(
    policyOf(algorithm, {
      name: `tight-${algorithm}`,
      limit: 2,
      window: '1h',
      ...(block === undefined ? {} : { block }),
    }),
  );
const loose = (algorithm: RateLimitAlgorithm, name: string): ResolvedPolicy =>
  validatePolicy(policyOf(algorithm, { name, limit: 10_000, window: '1h' }));

interface Shape {
  /** A request of `key` whose last enforced item (tight) is the one that denies. */
  readonly request: (algorithm: RateLimitAlgorithm, key: string) => EngineStoreItem[];
  /** Writes expected per key over its two denials: a block's start, where the policy has a block. */
  readonly writesPerKey: number;
}

const item = (policy: ResolvedPolicy, key: string, more: Partial<EngineStoreItem> = {}): EngineStoreItem => ({
  policy,
  key,
  cost: 1,
  ...more,
});

// Each takes a path of its own through the store's Lua: one item (lean or its twin's), several (counted
// first in the lean path, then decided by the general one), beside the lean kernels, a lease, a shadow item.
const SHAPES: Record<string, Shape> = {
  'one policy': { request: (a, key) => [item(tight(a), key)], writesPerKey: 0 },
  'three policies, the last denying': {
    request: (a, key) => [item(loose(a, 'a'), key), item(loose(a, 'b'), key), item(tight(a), key)],
    writesPerKey: 0,
  },
  'a fixed window and a GCRA that allow, then this one denying': {
    request: (a, key) => [
      item(loose('fixed-window', 'fw'), key),
      item(loose('gcra', 'gcra'), key),
      item(tight(a), key),
    ],
    writesPerKey: 0,
  },
  'a lease (up to more units)': { request: (a, key) => [item(tight(a), key, { upTo: 2 })], writesPerKey: 0 },
  'beside a shadow item that allows': {
    request: (a, key) => [item(loose(a, 'shadowed'), key, { shadow: true }), item(tight(a), key)],
    writesPerKey: 0,
  },
  'a policy with a block, after one that allows': {
    request: (a, key) => [item(loose(a, 'a'), key), item(tight(a, '10m'), key)],
    writesPerKey: 1,
  },
};

/** The dataset's changes since the last save (INFO persistence): what replication and the AOF carry. */
async function changes(): Promise<number> {
  const info = await redis.shared.info('persistence');
  return Number(/^rdb_changes_since_last_save:(\d+)/m.exec(info)?.[1]);
}

describe('regression: a denied request writes nothing to Redis', () => {
  const cases = ALGORITHMS.flatMap((algorithm) =>
    Object.entries(SHAPES).map(
      ([shape, { request, writesPerKey }]) => [algorithm, shape, request, writesPerKey] as const,
    ),
  );

  it.each(cases)('%s, %s: 600 denials over 300 keys', async (algorithm, _, request, writesPerKey) => {
    const clock = new FakeClock(TEST_START_MS);
    const store = new RedisRateLimitStore({ client: redis.shared, clock, keyPrefix: `dw${++prefixes}:` });
    // the tight policy's 2 units taken on every key (without the lease's up-to: its cost alone)
    const plain = (key: string) => request(algorithm, key).map(({ upTo: _, ...rest }) => rest);
    for (let round = 0; round < 2; round++) {
      const filled = await Promise.all(KEYS.map((key) => store.consume(plain(key))));
      expect(filled.flat().every((d) => d.allowed)).toBe(true);
    }
    const writes = await writesRun(redis.shared);
    const changed = await changes();
    // one denial a key on its own call, then one a key all at once (the store's batches)
    const denials = [];
    for (const key of KEYS) denials.push(await store.consume(request(algorithm, key)));
    denials.push(...(await Promise.all(KEYS.map((key) => store.consume(request(algorithm, key))))));
    expect(denials).toHaveLength(600);
    // the tight item, last of each request, denies every one of them
    expect(denials.every((decisions) => decisions.at(-1)?.allowed === false)).toBe(true);
    expect((await writesRun(redis.shared)) - writes).toBe(writesPerKey * KEYS.length);
    expect((await changes()) - changed).toBe(writesPerKey * KEYS.length);
  });
});
