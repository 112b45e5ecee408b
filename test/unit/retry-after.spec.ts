import { MemoryRateLimitStore, type RateLimitPolicy, validatePolicy } from '../../lib/index.js';
import { DecisionEngine, type EngineItem, type Evaluation, sourceAt } from '../../lib/engine/decision-engine.js';
import { StoreUnavailable } from '../../lib/engine/evaluation.js';
import type { FailMode, RateLimitDecisionSource } from '../../lib/policy/policy.types.js';
import { chosenWait, type Denied, type Unavailable } from '../../lib/responses/retry-after.js';
import type { RateLimitStore } from '../../lib/stores/rate-limit-store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { FailingStore } from '../support/failing-store.js';
import { alignedStart } from '../support/time.js';

// "Why 429 with Retry-After 5?": each row makes its decisions on the real engine (a store seen as remote, so it
// has a cache of denials and grants leases; a fake clock 55.5 s into a minute), then asks chosenWait, the one
// place where the wait a refused request is told is chosen, what the client is told.

const quiet = { log() {}, warn() {}, error() {} };
const MINUTE = 60_000;
/** 55.5 s into a minute: a fixed window of a minute has 4.5 s left, Retry-After 5. */
const LATE_MS = 55_500;

function setup() {
  const clock = new FakeClock(alignedStart(MINUTE));
  const store: RateLimitStore & { health: FailingStore['health'] } = Object.assign(
    new FailingStore(new MemoryRateLimitStore({ clock })),
    { grantsUpTo: true },
  );
  const engine = new DecisionEngine({
    stores: { rates: store, quotas: store, owned: [] },
    clock,
    timeoutMs: 5000,
    logger: quiet,
  });
  return { clock, store, engine };
}
type Setup = ReturnType<typeof setup>;

let engines: DecisionEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.map((e) => e.dispose()));
  engines = [];
});

const item = (policy: RateLimitPolicy, failMode: FailMode = 'open', order = 0): EngineItem => ({
  policy: validatePolicy(policy),
  key: 'k',
  cost: 1,
  failMode,
  order,
});

const WINDOW = { algorithm: 'fixed-window', limit: 2, window: '1m' } as const;

/** What the request path's conclusion gives chosenWait: the enforced denials, with where each came from. */
function refusalOf(evaluation: Evaluation): Denied & { sources: RateLimitDecisionSource[] } {
  const denials = evaluation.decisions.filter((d, i) => !d.allowed && evaluation.items[i]?.shadow !== true);
  return { denials, sources: evaluation.decisions.map((_, i) => sourceAt(evaluation, i)) };
}

/** Decides `items` `times` times at the clock's time; the last evaluation. */
async function decideTimes({ engine }: Setup, items: EngineItem[], times: number): Promise<Evaluation> {
  let last: Evaluation | undefined;
  for (let i = 0; i < times; i++) last = await engine.decide(items);
  return last as Evaluation;
}

interface Row {
  readonly source: string;
  /** Makes the request's refusal on the engine. */
  readonly refuse: (s: Setup) => Promise<(Denied & { sources?: RateLimitDecisionSource[] }) | Unavailable>;
  readonly sources?: RateLimitDecisionSource[];
  readonly policy: string;
  readonly retryAfterMs: number;
  readonly retryAfter: number | null;
}

const ROWS: Row[] = [
  {
    source: 'store: the window ends in 4.5 s',
    refuse: async (s) => {
      await decideTimes(s, [item({ ...WINDOW, name: 'api' })], 2);
      s.clock.advance(LATE_MS);
      return refusalOf(await s.engine.decide([item({ ...WINDOW, name: 'api' })]));
    },
    sources: ['store'],
    policy: 'api',
    retryAfterMs: 4_500,
    retryAfter: 5,
  },
  {
    source: "deny-cache: the store's denial, counting down (1 s later, store down)",
    refuse: async (s) => {
      const api = item({ ...WINDOW, name: 'api' });
      await decideTimes(s, [api], 2);
      s.clock.advance(LATE_MS);
      await s.engine.decide([api]);
      s.clock.advance(1_000);
      s.store.health = 'fails';
      return refusalOf(await s.engine.decide([api]));
    },
    sources: ['deny-cache'],
    policy: 'api',
    retryAfterMs: 3_500,
    retryAfter: 4,
  },
  {
    source: "lease: spent here, never a denial; the request's other policy (store) is what it waits for",
    refuse: async (s) => {
      const leased = item({ name: 'tenant', algorithm: 'fixed-window', limit: 100, window: '1m', lease: 10 });
      const api = item({ ...WINDOW, name: 'api' }, 'open', 1);
      // Takes grow from the cost alone: a few requests, and the leases hold units ahead.
      for (let i = 0; i < 8; i++) await s.engine.decide([leased]);
      await decideTimes(s, [api], 2);
      s.clock.advance(LATE_MS);
      const evaluation = await s.engine.decide([leased, api]);
      expect(evaluation.decisions[0]).toMatchObject({ allowed: true, retryAfterMs: 0 });
      return refusalOf(evaluation);
    },
    sources: ['lease', 'store'],
    policy: 'api',
    retryAfterMs: 4_500,
    retryAfter: 5,
  },
  {
    source: 'local: the store is down, the local limit (1) decides in this process',
    refuse: async (s) => {
      s.store.health = 'fails';
      const local = item({ ...WINDOW, name: 'local', localLimit: 1 }, 'local');
      await s.engine.decide([local]);
      s.clock.advance(LATE_MS);
      return refusalOf(await s.engine.decide([local]));
    },
    sources: ['local'],
    policy: 'local',
    retryAfterMs: 4_500,
    retryAfter: 5,
  },
  {
    source: "fail-closed: the store is down, the outage's wait is the timeout (5 s)",
    refuse: async (s) => {
      s.store.health = 'fails';
      const error = await s.engine.decide([item({ ...WINDOW, name: 'closed' }, 'closed')]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StoreUnavailable);
      const { policy, retryAfterMs } = error as StoreUnavailable;
      return { unavailable: policy, retryAfterMs };
    },
    policy: 'closed',
    retryAfterMs: 5_000,
    retryAfter: 5,
  },
  {
    source: 'concurrency: the oldest slot expires in 5 min, but the wait is cut to 1 s',
    refuse: async (s) => {
      const slots = item({ name: 'slots', algorithm: 'concurrency', limit: 1, window: '5m' });
      return refusalOf(await decideTimes(s, [slots], 2));
    },
    sources: ['store'],
    policy: 'slots',
    retryAfterMs: 1_000,
    retryAfter: 1,
  },
  {
    source: 'concurrency, local: the same cut on the in-process store',
    refuse: async (s) => {
      s.store.health = 'fails';
      const slots = item({ name: 'slots', algorithm: 'concurrency', limit: 1, window: '5m' }, 'local');
      return refusalOf(await decideTimes(s, [slots], 2));
    },
    sources: ['local'],
    policy: 'slots',
    retryAfterMs: 1_000,
    retryAfter: 1,
  },
  {
    source: 'block: the denial starts a block of 30 s, longer than the window',
    refuse: async (s) => {
      await decideTimes(s, [item({ ...WINDOW, name: 'login', block: '30s' })], 2);
      s.clock.advance(LATE_MS);
      return refusalOf(await s.engine.decide([item({ ...WINDOW, name: 'login', block: '30s' })]));
    },
    sources: ['store'],
    policy: 'login',
    retryAfterMs: 30_000,
    retryAfter: 30,
  },
  {
    source: 'block, 10.2 s later: the store counts the block down (a new window began, the block still holds)',
    refuse: async (s) => {
      const login = item({ ...WINDOW, name: 'login', block: '30s' });
      await decideTimes(s, [login], 2);
      s.clock.advance(LATE_MS);
      await s.engine.decide([login]);
      s.clock.advance(10_200);
      // The store's own count of the block, not its cached denial's (which counts down alike: the row above).
      s.engine.denyCache?.forgetAll();
      return refusalOf(await s.engine.decide([login]));
    },
    sources: ['store'],
    policy: 'login',
    retryAfterMs: 19_800,
    retryAfter: 20,
  },
  {
    source: 'concurrency under a block: the block is not cut',
    refuse: async (s) => {
      const slots = item({ name: 'slots', algorithm: 'concurrency', limit: 1, window: '5m', block: '10s' });
      return refusalOf(await decideTimes(s, [slots], 2));
    },
    sources: ['store'],
    policy: 'slots',
    retryAfterMs: 300_000,
    retryAfter: 300,
  },
  {
    source: 'two denials: the longest wait wins (the block, not the window)',
    refuse: async (s) => {
      const items = [item({ ...WINDOW, name: 'api' }), item({ ...WINDOW, name: 'login', block: '30s' }, 'open', 1)];
      await decideTimes(s, items, 2);
      s.clock.advance(LATE_MS);
      return refusalOf(await s.engine.decide(items));
    },
    sources: ['store', 'store'],
    policy: 'login',
    retryAfterMs: 30_000,
    retryAfter: 30,
  },
  {
    source: 'a cost that never fits: no Retry-After (retrying cannot help)',
    refuse: async (s) => refusalOf(await s.engine.decide([{ ...item({ ...WINDOW, name: 'api' }), cost: 3 }])),
    sources: ['store'],
    policy: 'api',
    retryAfterMs: Infinity,
    retryAfter: null,
  },
];

describe('chosenWait: the wait a refused request is told, from each source', () => {
  it.each(ROWS)('$source', async ({ refuse, sources, policy, retryAfterMs, retryAfter }) => {
    const s = setup();
    engines.push(s.engine);
    const refusal = await refuse(s);
    if (sources !== undefined) expect('sources' in refusal ? refusal.sources : undefined).toEqual(sources);
    const chosen = 'unavailable' in refusal ? chosenWait(refusal) : chosenWait(refusal);
    expect({ policy: chosen.policy, retryAfterMs: chosen.retryAfterMs, retryAfter: chosen.retryAfter }).toEqual({
      policy,
      retryAfterMs,
      retryAfter,
    });
    if (chosen.decision !== undefined) expect(chosen.decision.policy).toBe(policy);
  });

  it('rounds up to whole seconds, at least 1; an outage always says a wait', () => {
    const denial = (ms: number) => ({
      allowed: false,
      policy: 'p',
      limit: 1,
      remaining: 0,
      resetMs: ms,
      retryAfterMs: ms,
    });
    expect(chosenWait({ denials: [denial(4_001)] }).retryAfter).toBe(5);
    expect(chosenWait({ denials: [denial(5_000)] }).retryAfter).toBe(5);
    expect(chosenWait({ denials: [denial(1)] }).retryAfter).toBe(1);
    expect(chosenWait({ unavailable: 'p', retryAfterMs: 250 }).retryAfter).toBe(1);
    expect(chosenWait({ unavailable: 'p', retryAfterMs: Infinity }).retryAfter).toBe(1);
  });

  it('of equal waits, the first denial (in the route order) answers', () => {
    const denial = (policy: string) => ({
      allowed: false,
      policy,
      limit: 1,
      remaining: 0,
      resetMs: 0,
      retryAfterMs: 2_000,
    });
    expect(chosenWait({ denials: [denial('first'), denial('second')] }).policy).toBe('first');
  });
});
