import type { Criticality } from '../../../../lib/policy/criticality.js';
import { SHEDDING_DEFAULTS, type SheddingSettings } from '../../../../lib/shedding/shedding-options.js';
import { SimulatorError } from '../traffic.js';

/**
 * What admits the requests of a run: nothing (`off`: every request goes to the dependency), the library's
 * LoadShedder (`gradient2`: its Gradient2 limit fed one mean latency a 1-second window), or LoadShedder's
 * criticality ceilings (CeilingShedder) over Netflix's VegasLimit fed each request (`vegas`).
 */
export const SHEDDING_VARIANTS = ['off', 'gradient2', 'vegas'] as const;
export type SheddingVariant = (typeof SHEDDING_VARIANTS)[number];

/**
 * The two runs the docs show: the offered load rising from `loadFrom` to `loadTo` times the dependency's capacity
 * (`rising-load`), and a steady load over a dependency whose service time changes from `serviceMs` to
 * `slowerServiceMs` halfway through, as after a slower deploy (`slower-deploy`).
 */
export const SHEDDING_SCENARIOS = ['rising-load', 'slower-deploy'] as const;
export type SheddingScenario = (typeof SHEDDING_SCENARIOS)[number];

/** The share of the offered requests of each criticality (they add up to 1). */
export type TrafficMix = Readonly<Record<Criticality, number>>;

/**
 * One run: an app instance in front of a dependency of fixed capacity (`concurrency` requests served at once, each
 * for `serviceMs`, a FIFO queue before them), offered open-loop Poisson arrivals for `durationMs`, whose clients
 * give up after `timeoutMs`.
 */
export interface SheddingSimOptions {
  readonly scenario: SheddingScenario;
  readonly variant: SheddingVariant;
  /** Requests the dependency serves at once. */
  readonly concurrency: number;
  /** The dependency's service time per request, ms (its capacity: concurrency × 1000 / serviceMs a second). */
  readonly serviceMs: number;
  /** How much one service time varies: uniformly by up to ± this fraction of it (0: every one is serviceMs). */
  readonly serviceJitter: number;
  /** `slower-deploy`: the service time from halfway through the run, ms. */
  readonly slowerServiceMs: number;
  /** The offered rate at the start, as a multiple of the capacity (at serviceMs). */
  readonly loadFrom: number;
  /** The offered rate at the end; it rises linearly in between (`slower-deploy` offers loadFrom throughout). */
  readonly loadTo: number;
  readonly mix: TrafficMix;
  /** A client waits this long for its response; one that comes later is not goodput. */
  readonly timeoutMs: number;
  readonly durationMs: number;
  readonly seed: number;
  /** The `shedding` option's settings, for both limits (bounds, start, reserve). */
  readonly shedding: SheddingSettings;
  /** Vegas: probe for a new no-load latency every probeMultiplier × limit samples (jittered); 0: never. */
  readonly vegasProbe: number;
}

/**
 * The rising-load run: a dependency of 10 requests at once for 20 ms each (500 a second), offered 0.5× to 4× that
 * over 60 s, 20% critical, 50% default and 30% sheddable, clients that wait 1 s, the `shedding` defaults.
 */
export const SHEDDING_SIM_DEFAULTS: SheddingSimOptions = {
  scenario: 'rising-load',
  variant: 'gradient2',
  concurrency: 10,
  serviceMs: 20,
  serviceJitter: 0.5,
  slowerServiceMs: 40,
  loadFrom: 0.5,
  loadTo: 4,
  mix: { critical: 0.2, default: 0.5, sheddable: 0.3 },
  timeoutMs: 1000,
  durationMs: 60_000,
  seed: 1,
  shedding: SHEDDING_DEFAULTS,
  vegasProbe: 0,
};

/** What each scenario changes from the defaults: the slower deploy offers a steady 1.5× the first capacity. */
export const SCENARIO_DEFAULTS: Readonly<Record<SheddingScenario, Partial<SheddingSimOptions>>> = {
  'rising-load': {},
  'slower-deploy': { loadFrom: 1.5, loadTo: 1.5 },
};

/** The most requests one run offers. */
export const MAX_SHEDDING_REQUESTS = 5_000_000;

/** The dependency's capacity in requests a second at its first service time. */
export const capacityOf = (o: SheddingSimOptions): number => (o.concurrency * 1000) / o.serviceMs;

/** Checks a run's options; a SimulatorError names the flag at fault and what would be right. */
export function checkSheddingOptions(o: SheddingSimOptions): SheddingSimOptions {
  const fail = (flag: string, problem: string): never => {
    throw new SimulatorError(`--${flag}`, problem);
  };
  const whole = (n: number, least: number) => Number.isSafeInteger(n) && n >= least;
  if (!(SHEDDING_SCENARIOS as readonly string[]).includes(o.scenario)) {
    fail('scenario', `must be one of ${SHEDDING_SCENARIOS.join(', ')}, got ${o.scenario}`);
  }
  if (!(SHEDDING_VARIANTS as readonly string[]).includes(o.variant)) {
    fail('variant', `must be one of ${SHEDDING_VARIANTS.join(', ')}, got ${o.variant}`);
  }
  if (!whole(o.concurrency, 1) || o.concurrency > 10_000) {
    fail('concurrency', `must be an integer from 1 to 10000, got ${o.concurrency}`);
  }
  if (!(o.serviceMs >= 1 && o.serviceMs <= 60_000)) fail('service', `must be from 1ms to 1m, got ${o.serviceMs} ms`);
  if (!(o.slowerServiceMs >= 1 && o.slowerServiceMs <= 60_000)) {
    fail('slower-service', `must be from 1ms to 1m, got ${o.slowerServiceMs} ms`);
  }
  if (!(o.serviceJitter >= 0 && o.serviceJitter < 1)) {
    fail('jitter', `must be a fraction from 0 to below 1, got ${o.serviceJitter}`);
  }
  if (!(o.loadFrom > 0 && o.loadFrom <= 100)) fail('load-from', `must be above 0 and at most 100, got ${o.loadFrom}`);
  if (!(o.loadTo > 0 && o.loadTo <= 100)) fail('load-to', `must be above 0 and at most 100, got ${o.loadTo}`);
  const shares = Object.values(o.mix);
  if (shares.some((s) => !(s >= 0)) || Math.abs(shares.reduce((a, b) => a + b, 0) - 1) > 1e-9) {
    fail('mix', `must be three shares (critical, default, sheddable) that add up to 1, got ${JSON.stringify(o.mix)}`);
  }
  if (!whole(o.timeoutMs, 1)) fail('timeout', `must be a whole number of ms >= 1, got ${o.timeoutMs}`);
  if (!whole(o.durationMs, 1000) || o.durationMs > 3_600_000) {
    fail('duration', `must be from 1s to 1h, got ${o.durationMs} ms`);
  }
  if (!whole(o.seed, 0) || o.seed > 0xffff_ffff) fail('seed', `must be an integer from 0 to 4294967295, got ${o.seed}`);
  if (!whole(o.vegasProbe, 0)) fail('vegas-probe', `must be an integer >= 0 (0: never), got ${o.vegasProbe}`);
  const requests = (capacityOf(o) * Math.max(o.loadFrom, o.loadTo) * o.durationMs) / 1000;
  if (requests > MAX_SHEDDING_REQUESTS) {
    fail(
      'duration',
      `up to ${Math.round(requests)} requests; at most ${MAX_SHEDDING_REQUESTS} are simulated (lower --duration or --load-to)`,
    );
  }
  return o;
}
