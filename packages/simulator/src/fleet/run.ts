import type { EngineItem } from '../../../../lib/engine/evaluation.js';
import type { ResolvedPolicy } from '../../../../lib/policy/policy.types.js';
import { RateLimitPolicyError } from '../../../../lib/policy/policy.errors.js';
import { validatePolicy } from '../../../../lib/policy/validate-policy.js';
import { SimulatorError } from '../traffic.js';
import { sharesOf, FleetArrivals } from './arrivals.js';
import type { FleetBound } from './bounds.js';
import { FleetCounts, type FleetWindow } from './counts.js';
import { FleetInstance } from './instance.js';
import { checkFleetOptions, FLEET_DEFAULTS, type FleetOptions } from './options.js';
import { seeded } from './random.js';
import type { FleetSecond } from './tally.js';
import { VirtualClock, VirtualStore, type OneWayDelays } from './virtual-store.js';

export type { FleetWindow } from './counts.js';

/** A fleet run: what each second saw, the chart's finer slots, and the totals. */
export interface FleetResult {
  readonly options: FleetOptions;
  readonly policy: ResolvedPolicy;
  readonly seconds: readonly FleetSecond[];
  /** The same counts per `slotMs` (shares left out), for the chart. */
  readonly slots: readonly FleetSecond[];
  readonly slotMs: number;
  readonly offered: number;
  readonly admitted: number;
  readonly storeCalls: number;
  /** Units the store counted for the fleet: each allowed call's `granted` (its cost without a lease). */
  readonly granted: number;
  /**
   * Admissions by an instance beyond the units the store had counted for it until then: 0 unless an instance
   * spends more than it took (the leases' invariant, checked on every admission).
   */
  readonly overspent: number;
  readonly bound: FleetBound;
  /** Window algorithms: units admitted in each whole window of the run, and whether the store denied in it. */
  readonly windows: readonly FleetWindow[];
  /** With `record`: the time (ms after the start) of every admission, in order, for a check of its own. */
  readonly admittedAtMs?: readonly number[];
}

/** The key every instance offers its traffic to: one hot key. */
const KEY = 'fleet';

/**
 * Lets the engines go on: every continuation that the last event made ready (a reply's, and those of the requests
 * that waited for its take) runs before the clock moves. The engine awaits promises; a turn of the event loop
 * runs every microtask they queue.
 */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Simulates a fleet in virtual time: each instance's requests arrive (FleetArrivals) and are decided by the
 * library's own DecisionEngine, one per instance (FleetInstance), on a shared store in virtual time
 * (VirtualStore): a store call reaches the store after half the round trip, is decided there and then by the
 * memory store, and its reply reaches the instance after the whole round trip (each half varied by
 * `rttJitterUs`, if set). Deterministic for a seed.
 * @example (await runFleet({ instances: 10, ratePerSecond: 10_000, limit: 5_000, durationMs: 2000 })).bound.most <= 5000
 */
export async function runFleet(asked: Partial<FleetOptions> = {}, { record = false } = {}): Promise<FleetResult> {
  const options = checkFleetOptions({ ...FLEET_DEFAULTS, ...asked });
  const policy = policyOf(options);
  const counts = new FleetCounts(options, policy, record);
  const clock = new VirtualClock();
  const store = new VirtualStore(clock, oneWayDelays(options), () => counts.call(clock.ms));
  const item: EngineItem = { policy, key: KEY, cost: 1, failMode: 'open', order: 0 };
  const instances = Array.from(
    { length: options.instances },
    (_, i) => new FleetInstance(i, item, options.growth, store, clock),
  );
  await Promise.all(instances.map((instance) => instance.start()));
  try {
    await run(options, clock, store, instances, counts);
  } finally {
    await Promise.all(instances.map((instance) => instance.dispose()));
  }
  const { seconds, slots } = counts;
  const sum = (values: Float64Array) => values.reduce((total, n) => total + n, 0);
  return {
    ...{ options, policy, seconds: seconds.seconds(), slots: slots.seconds(), slotMs: slots.slotMs },
    ...{ offered: sum(seconds.offered), admitted: sum(seconds.admitted), storeCalls: sum(seconds.storeCalls) },
    ...{ granted: sum(counts.grantedBy), overspent: counts.overspent, bound: counts.bound.result() },
    windows:
      options.algorithm === 'fixed-window' || options.algorithm === 'sliding-window-counter' ? counts.windows : [],
    ...(counts.admittedAtMs === undefined ? {} : { admittedAtMs: counts.admittedAtMs }),
  };
}

/** Takes the run's events in time order: calls reaching the store, replies reaching instances, and arrivals. */
async function run(
  options: FleetOptions,
  clock: VirtualClock,
  store: VirtualStore,
  instances: readonly FleetInstance[],
  counts: FleetCounts,
): Promise<void> {
  const arrivals = new FleetArrivals(
    sharesOf(options.instances, options.skew),
    options.ratePerSecond,
    options.arrivals,
    options.seed,
  );
  const endUs = options.durationMs * 1000;
  const failures: unknown[] = [];
  const spent = (instance: number) => counts.admit(clock.ms, instance);
  const failed = (error: unknown) => failures.push(error);
  for (;;) {
    const storeUs = store.toStore.nextUs;
    const replyUs = store.toReply.nextUs;
    // Arrivals stop at the end; the calls in flight then are still decided, for the bound.
    const arrivalUs = arrivals.atUs < endUs ? arrivals.atUs : Infinity;
    if (storeUs === Infinity && replyUs === Infinity && arrivalUs === Infinity) break;
    clock.us = Math.min(storeUs, replyUs, arrivalUs);
    store.confirm();
    if (storeUs <= replyUs && storeUs <= arrivalUs) {
      const call = await store.decideNext();
      const decision = call.decisions?.[0];
      if (decision?.allowed !== true) continue;
      counts.granted(call.instance, decision.granted ?? 1);
      counts.admit(clock.ms, call.instance);
      continue;
    }
    if (replyUs <= arrivalUs) store.replyNext();
    else {
      const instance = instances[arrivals.instance] as FleetInstance;
      arrivals.advance();
      counts.offer(clock.ms);
      instance.arrive(spent, failed);
    }
    await settled();
    if (failures.length > 0) throw failures[0];
  }
}

/**
 * The two halves of a call's round trip, in whole µs: the way out is half of `rttUs` (rounded down), the way back
 * the rest, each varied uniformly by up to ± rttJitterUs / 2 (never below 0) from a source seeded apart from the
 * arrivals'. Without jitter every call takes exactly the round trip, and replies come back in the order the calls
 * went out.
 */
function oneWayDelays({ rttUs, rttJitterUs, seed }: FleetOptions): OneWayDelays {
  const half = Math.floor(rttUs / 2);
  if (rttJitterUs === 0) return { out: () => half, back: () => rttUs - half };
  const next = seeded(seed ^ 0x5bd1e995);
  const varied = (us: number) => Math.max(0, Math.round(us + (next() - 0.5) * rttJitterUs));
  return { out: () => varied(half), back: () => varied(rttUs - half) };
}

/** The run's policy, checked by validatePolicy; its errors name the flag (`--burst`, `--lease`). */
function policyOf({ algorithm, limit, windowMs, burst, lease }: FleetOptions): ResolvedPolicy {
  try {
    return validatePolicy({ name: 'fleet', algorithm, limit, window: windowMs, burst, lease });
  } catch (error) {
    if (!(error instanceof RateLimitPolicyError)) throw error;
    const problem = error.message.replace(/^Invalid rate-limit policy "[^"]*", field "[^"]*": /, '');
    throw new SimulatorError(`--${error.field ?? 'limit'}`, problem);
  }
}
