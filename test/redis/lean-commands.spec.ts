import { RedisRateLimitStore, validatePolicy, type ResolvedPolicy } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { callsOf } from '../support/redis-commands.js';
import { redisForSpec } from '../support/redis-server.js';

// The commands the lean path sends Redis per decision (INFO commandstats): one policy reads its key by GET and,
// when allowed, makes it (SET) or moves it (INCRBY); a request of several policies reads all its keys in one
// MGET, then writes each one when every one allowed; a denial writes nothing.

const redis = redisForSpec();
const NOW = 1_796_053_232_358;
let prefixes = 0;

const COMMANDS = ['get', 'mget', 'set', 'incrby', 'pexpire'] as const;
type Counts = Record<(typeof COMMANDS)[number], number>;

async function counts(): Promise<Counts> {
  const entries = await Promise.all(COMMANDS.map(async (c) => [c, await callsOf(redis.shared, c)] as const));
  return Object.fromEntries(entries) as Counts;
}
const delta = (after: Counts, before: Counts): Partial<Counts> =>
  Object.fromEntries(COMMANDS.filter((c) => after[c] !== before[c]).map((c) => [c, after[c] - before[c]]));

const storeOf = (): RedisRateLimitStore =>
  new RedisRateLimitStore({ client: redis.shared, clock: new FakeClock(NOW), keyPrefix: `lc${++prefixes}:` });

/** The commands of three requests of `request` in a row, the third denied by its last policy (limit 2). */
async function threeRequests(request: { policy: ResolvedPolicy; key: string; cost: number }[]) {
  const store = storeOf();
  const steps: Partial<Counts>[] = [];
  for (let n = 0; n < 3; n++) {
    const before = await counts();
    const decisions = await store.consume(request);
    expect(decisions.at(-1)?.allowed).toBe(n < 2);
    steps.push(delta(await counts(), before));
  }
  return steps;
}

const fixedWindow = validatePolicy({ name: 'fw', algorithm: 'fixed-window', limit: 2, window: '1m' });
const loose = (name: string) => validatePolicy({ name, algorithm: 'fixed-window', limit: 100, window: '1m' });

describe('the lean path', () => {
  it('reads one policy by GET, then makes its key or moves it; a denial writes nothing', async () => {
    const steps = await threeRequests([{ policy: fixedWindow, key: 'k', cost: 1 }]);
    expect(steps).toEqual([{ get: 1, set: 1 }, { get: 1, incrby: 1 }, { get: 1 }]);
  });

  it('reads the keys of several policies in one MGET, then writes each; a denial writes nothing', async () => {
    const request = [loose('a'), loose('b'), fixedWindow].map((policy) => ({ policy, key: 'k', cost: 1 }));
    const steps = await threeRequests(request);
    expect(steps).toEqual([{ mget: 1, set: 3 }, { mget: 1, incrby: 3 }, { mget: 1 }]);
  });
});
