import { RedisRateLimitStore, validatePolicy } from '../../lib/index.js';
import { ALGORITHMS } from '../../lib/policy/policy.types.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { luaFiles, PRELUDE_LUA, STATE_CODEC_LUA } from '../support/lua-files.js';
import { policyOf } from '../support/policies.js';
import { redisForSpec } from '../support/redis-server.js';

const redis = redisForSpec();

/** Encodes with the store's own Lua, decodes again; returns the stored bytes' length and the numbers read. */
async function roundTrip(
  kind: 'pair' | 'triple' | 'rated' | 'log',
  numbers: number[],
): Promise<{ length: number; packed: boolean; back: string[] }> {
  const encode =
    kind === 'log'
      ? `local times, costs = {}, {}
         for i = 1, #ARGV, 2 do times[#times + 1] = tonumber(ARGV[i]); costs[#costs + 1] = tonumber(ARGV[i + 1]) end
         local raw = log_encode(times, costs)
         local t, c = log_decode(raw)
         local back = {}
         for i = 1, #t do back[#back + 1] = fmt(t[i]); back[#back + 1] = fmt(c[i]) end
         return { #raw, is_packed(raw) and 1 or 0, back }`
      : `local raw = ${kind}_encode(${numbers.map((_, i) => `tonumber(ARGV[${i + 1}])`).join(', ')})
         local back = { ${kind}_decode(raw) }
         for i = 1, #back do back[i] = fmt(back[i]) end
         return { #raw, (is_packed(raw) or byte(raw, 1) >= 128) and 1 or 0, back }`;
  const [length, packed, back] = (await redis.shared.eval(
    `${luaFiles(PRELUDE_LUA, STATE_CODEC_LUA)}\n${encode}`,
    0,
    ...numbers.map(String),
  )) as [number, number, string[]];
  return { length, packed: packed === 1, back };
}

describe('the Lua state codec', () => {
  const now = 1_796_053_232_358;

  it.each<['pair' | 'triple' | 'rated' | 'log', number[], boolean]>([
    ['pair', [498_903, 1], true], // short numbers too: packing costs Redis less than formatting them
    ['pair', [now, 0], true],
    ['pair', [now, 2 ** 47 - 1], true],
    ['pair', [now, -(2 ** 47)], true],
    ['pair', [now, 2 ** 47], false], // past 6 signed bytes
    ['pair', [2 ** 45 - 1, 7], true],
    ['pair', [2 ** 45, 7], false], // its first byte would be 32
    ['pair', [-now, 7], false], // non-monotonic test clocks: negative times stay text
    ['pair', [2 ** 51, 2 ** 51], false],
    ['triple', [29_933_333, 5, 7], true], // 12 characters as text: packed all the same
    ['triple', [1_796_053_268, 5, 7], true],
    ['triple', [1_796_053_268, 2 ** 23 - 1, 0], true],
    ['triple', [1_796_053_268, 2 ** 23, 0], false],
    ['triple', [-1_796_053_268, 1, 0], false],
    ['rated', [4_000, 5, 6], true],
    ['rated', [now, 360_000_000, 100], true], // 100 per hour, all taken
    ['rated', [now, 2 ** 33 - 1, 127], true], // 33 + 7 bits
    ['rated', [now, 2 ** 33, 127], false],
    ['rated', [now, 1, 2 ** 39 - 1], true],
    ['rated', [now, 1, 2 ** 39], false],
    ['rated', [now, 0, 2 ** 51], false],
    ['rated', [-now, 5, 6], true], // a time before the epoch fits its 6 signed bytes
    ['log', [now, 1], true],
    ['log', [now, 1, now + 5, 3, now + 9, 2 ** 40], true],
    ['log', [now, 1, -5, 1], false], // one entry that cannot be packed keeps the whole log as text
  ])('%s %j: packed %s, and read back as written', async (kind, numbers, packed) => {
    const result = await roundTrip(kind, numbers);
    expect(result.packed).toBe(packed);
    if (packed) expect(result.length).toBe(kind === 'log' ? 6 * numbers.length : 12);
    expect(result.back).toEqual(numbers.map((n) => n.toFixed(0)));
  });

  it.each([
    ['packed', `struct.pack('>i6i6', ${now}, 42)`],
    ['text', `'${now}:42'`],
  ])(
    'reads a pair (%s) as a rated state without its rate: a token bucket state of an earlier version',
    async (_, raw) => {
      const back = (await redis.shared.eval(
        `${luaFiles(PRELUDE_LUA, STATE_CODEC_LUA)}\nlocal back = { rated_decode(${raw}) } for i = 1, #back do back[i] = fmt(back[i]) end return back`,
        0,
      )) as string[];
      expect(back).toEqual([String(now), '42']);
    },
  );

  it('reads a state written as text by the store before it packed states', async () => {
    const [w, c, p] = (await redis.shared.eval(
      `${luaFiles(PRELUDE_LUA, STATE_CODEC_LUA)}\nlocal a, b, c = triple_decode('1796053268:5:7') return { fmt(a), fmt(b), fmt(c) }`,
      0,
    )) as string[];
    expect([w, c, p]).toEqual(['1796053268', '5', '7']);
  });
});

// The speed issue's bound: at most 100 bytes per tracked key (MEMORY USAGE), one consume per key, with keys as
// the module makes them at its default prefix (a key's own length counts too).
describe.each(ALGORITHMS)('%s keys in Redis', (algorithm) => {
  it('take at most 100 bytes each (MEMORY USAGE) after one consume', async () => {
    await redis.shared.flushall();
    const store = new RedisRateLimitStore({ client: redis.shared });
    const policy = validatePolicy(policyOf(algorithm, { name: 'per-user', limit: 100, window: '1h', period: 'month' }));
    const keys = Array.from({ length: 20 }, (_, i) => `user:${10_000 + i}`);
    await Promise.all(keys.map((key) => store.consume([{ policy, key, cost: 1 }])));
    const usage = await Promise.all(
      keys.map((key) => redis.shared.call('MEMORY', 'USAGE', storageKey('rl:', policy, key), 'SAMPLES', '0')),
    );
    for (const bytes of usage) {
      expect(bytes).not.toBeNull(); // the key is there
      expect(Number(bytes)).toBeLessThanOrEqual(100);
    }
  });
});
