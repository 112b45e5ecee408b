import type { EngineItem } from '../../../../lib/engine/evaluation.js';
import type { ResolvedPolicy } from '../../../../lib/policy/policy.types.js';
import { RateLimitPolicyError } from '../../../../lib/policy/policy.errors.js';
import { validatePolicy } from '../../../../lib/policy/validate-policy.js';
import { consumeAll, type StateTable } from '../../../../lib/stores/consume-all.js';
import { SimulatorError } from '../traffic.js';
import { sharesOf, FleetArrivals } from './arrivals.js';
import { BoundCheck, type FleetBound } from './bounds.js';
import { FleetInstance, type FleetCall } from './instance.js';
import { EventQueue } from './event-queue.js';
import { checkFleetOptions, FLEET_DEFAULTS, type FleetOptions } from './options.js';
import { seeded } from './random.js';
import { Tally, type FleetSecond } from './tally.js';

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

/** One whole window of a window algorithm's run: requests offered in it, and units admitted in it. */
export interface FleetWindow {
  readonly offered: number;
  readonly admitted: number;
}

/** The key every instance offers its traffic to: one hot key. */
const KEY = 'fleet';
/** 2023-11-14 rounded up to a whole hour: a realistic clock, at an edge of every window that divides an hour. */
const EPOCH_MS = 1_700_002_800_000;

/** One key's state on a Map, as consumeAll reads and writes it (the memory store's procedure, without its eviction). */
function mapTable(): StateTable {
  const states = new Map<string, unknown>();
  return {
    get: (key) => states.get(key),
    set: (key, _algorithm, state, ttlMs) => {
      if (state === undefined || ttlMs <= 0) states.delete(key);
      else states.set(key, state);
    },
  };
}

/**
 * Simulates a fleet in virtual time: each instance's requests arrive (FleetArrivals) and are decided as the
 * engine decides them (FleetInstance); a store call reaches the shared store after half the round trip, which
 * decides it there and then with consumeAll (the memory store's procedure), and its reply reaches the instance
 * after the whole round trip (each half varied by `rttJitterUs`, if set). Deterministic for a seed.
 * @example runFleet({ instances: 10, ratePerSecond: 10_000, limit: 5_000, durationMs: 2000 }).bound.most <= 5000
 */
export function runFleet(asked: Partial<FleetOptions> = {}, { record = false } = {}): FleetResult {
  const options = checkFleetOptions({ ...FLEET_DEFAULTS, ...asked });
  const { algorithm, windowMs, durationMs } = options;
  const policy = policyOf(options);
  const item: EngineItem = { policy, key: KEY, cost: 1, failMode: 'open', order: 0 };
  const instances = Array.from(
    { length: options.instances },
    (_, i) => new FleetInstance(i, item, options.growth, options.denyCache),
  );
  const arrivals = new FleetArrivals(
    sharesOf(options.instances, options.skew),
    options.ratePerSecond,
    options.arrivals,
    options.seed,
  );
  const seconds = new Tally(1000, durationMs, options.instances, true);
  const slotMs = chartSlotMs(durationMs);
  const slots = new Tally(slotMs, durationMs, options.instances, false);
  const bound = new BoundCheck(policy);
  const table = mapTable();
  const windowCount = Math.floor(durationMs / windowMs);
  const windows = Array.from({ length: windowCount }, () => ({ offered: 0, admitted: 0 }));
  const endUs = durationMs * 1000;
  const msOf = (us: number): number => Math.floor(us / 1000);
  const admittedAtMs: number[] | undefined = record ? [] : undefined;
  const grantedBy = new Float64Array(options.instances);
  const admittedBy = new Float64Array(options.instances);
  let overspent = 0;
  const admit = (ms: number, instance: number) => {
    admittedBy[instance] = (admittedBy[instance] as number) + 1;
    if ((admittedBy[instance] as number) > (grantedBy[instance] as number)) overspent++;
    admittedAtMs?.push(ms);
    bound.admit(ms);
    seconds.admit(ms, instance);
    slots.admit(ms, instance);
    const window = windows[Math.floor(ms / windowMs)];
    if (window !== undefined) window.admitted++;
  };
  /** Calls on their way to the store, and decided calls on their way back, each by when they get there. */
  const toStore = new EventQueue<FleetCall>();
  const toReply = new EventQueue<FleetCall>();
  const delays = oneWayDelays(options);
  /** A request of `instance` at `atUs` (after waiting for `waited` takes): admitted here, refused, or a call. */
  const decide = (instance: FleetInstance, atUs: number, waited: number) => {
    const ms = msOf(atUs);
    const decided = instance.arrive(EPOCH_MS + ms, atUs, waited);
    if (decided === 'local') admit(ms, instance.index);
    else if (decided !== 'denied' && decided !== 'waiting') {
      toStore.push(atUs + delays.out(), decided);
      seconds.call(ms);
      slots.call(ms);
    }
    resume(instance, atUs);
  };
  /** The requests of `instance` whose take is over arrive again at `atUs`, in the order they came. */
  const resume = (instance: FleetInstance, atUs: number): void => {
    for (const waited of instance.resumed()) decide(instance, atUs, waited);
  };
  for (;;) {
    const storeUs = toStore.nextUs;
    const replyUs = toReply.nextUs;
    const arrivalUs = arrivals.atUs;
    // Arrivals stop at the end; the calls in flight then are still decided, for the bound.
    const nextArrivalUs = arrivalUs < endUs ? arrivalUs : Infinity;
    if (storeUs === Infinity && replyUs === Infinity && nextArrivalUs === Infinity) break;
    if (storeUs <= replyUs && storeUs <= nextArrivalUs) {
      const call = toStore.pop() as FleetCall;
      const ms = msOf(storeUs);
      call.decisions = consumeAll(call.items, EPOCH_MS + ms, table);
      toReply.push(storeUs + delays.back(), call);
      const decision = call.decisions[0];
      if (decision?.allowed === true) {
        const i = call.instance.index;
        grantedBy[i] = (grantedBy[i] as number) + (decision.granted ?? 1);
        admit(ms, i);
      }
    } else if (replyUs <= nextArrivalUs) {
      const call = toReply.pop() as FleetCall;
      call.instance.reply(call, EPOCH_MS + msOf(call.sentUs), EPOCH_MS + msOf(replyUs));
      resume(call.instance, replyUs);
    } else {
      const instance = instances[arrivals.instance] as FleetInstance;
      arrivals.advance();
      const ms = msOf(arrivalUs);
      seconds.offer(ms);
      const window = windows[Math.floor(ms / windowMs)];
      if (window !== undefined) window.offered++;
      slots.offer(ms);
      decide(instance, arrivalUs, 0);
    }
  }
  const sum = (values: Float64Array) => values.reduce((total, n) => total + n, 0);
  return {
    options,
    policy,
    seconds: seconds.seconds(),
    slots: slots.seconds(),
    slotMs,
    offered: sum(seconds.offered),
    admitted: sum(seconds.admitted),
    storeCalls: sum(seconds.storeCalls),
    granted: sum(grantedBy),
    overspent,
    bound: bound.result(),
    windows: algorithm === 'fixed-window' || algorithm === 'sliding-window-counter' ? windows : [],
    ...(admittedAtMs === undefined ? {} : { admittedAtMs }),
  };
}

/**
 * The two halves of a call's round trip, in whole µs: the way out is half of `rttUs` (rounded down), the way back
 * the rest, each varied uniformly by up to ± rttJitterUs / 2 (never below 0) from a source seeded apart from the
 * arrivals'. Without jitter every call takes exactly the round trip, and replies come back in the order the calls
 * went out.
 */
function oneWayDelays({ rttUs, rttJitterUs, seed }: FleetOptions): { out: () => number; back: () => number } {
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

/** The chart's slot: 1/100 of the run, rounded to an easily read width (at least 10 ms). */
function chartSlotMs(durationMs: number): number {
  const nice = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000];
  return nice.find((ms) => ms >= durationMs / 100) ?? 60_000;
}
