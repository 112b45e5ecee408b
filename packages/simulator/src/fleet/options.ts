import { parseWindow } from '../../../../lib/policy/window.js';
import { SimulatorError } from '../traffic.js';

/** The algorithms a fleet run compares: the rate limits an instance can take units of ahead (RateLimitPolicy.lease). */
export const FLEET_ALGORITHMS = ['fixed-window', 'sliding-window-counter', 'token-bucket', 'gcra'] as const;
export type FleetAlgorithm = (typeof FLEET_ALGORITHMS)[number];

/**
 * How each instance leases: 'off' (the policy has no lease: every request the cache of denials does not refuse is a
 * store call), or 'growing' (the policy's lease, taken by the engine's LeaseBook, whose takes grow while a key is
 * hot).
 */
export const LEASE_MODES = ['off', 'growing'] as const;
export type LeaseMode = (typeof LEASE_MODES)[number];

/** How an instance's requests arrive: a Poisson stream, or evenly spaced (each instance at its own phase). */
export const ARRIVAL_KINDS = ['poisson', 'even'] as const;
export type ArrivalKind = (typeof ARRIVAL_KINDS)[number];

/** A fleet run: `instances` offering `ratePerSecond` requests in all to one key of one policy, for `durationMs`. */
export interface FleetOptions {
  readonly instances: number;
  /** Requests per second offered by the whole fleet. */
  readonly ratePerSecond: number;
  readonly algorithm: FleetAlgorithm;
  readonly limit: number;
  readonly windowMs: number;
  /** Token bucket and GCRA capacity; default the limit. */
  readonly burst?: number;
  /** The policy's `lease`: the most units one take asks for. */
  readonly lease: number;
  readonly growth: LeaseMode;
  /** A store call's round trip in µs: the store decides after half of it, the reply arrives after all of it. */
  readonly rttUs: number;
  /** How much each half of a round trip varies, in µs: uniformly by up to ± half of it; 0, the default: not at all. */
  readonly rttJitterUs: number;
  readonly durationMs: number;
  readonly arrivals: ArrivalKind;
  /** Instance i offers a share ∝ 1 / (i + 1)^skew of the rate: 0 is even. */
  readonly skew: number;
  readonly seed: number;
}

/**
 * The default run: 100 instances offering 1,000,000 requests a second to a fixed window of 500,000 per second
 * (the fleet offers twice the limit; a limit GCRA's whole-µs interval holds exactly), lease 100, takes growing,
 * a 1 ms round trip and the cache of denials, for 2 seconds (two windows).
 */
export const FLEET_DEFAULTS: FleetOptions = {
  instances: 100,
  ratePerSecond: 1_000_000,
  algorithm: 'fixed-window',
  limit: 500_000,
  windowMs: 1000,
  lease: 100,
  growth: 'growing',
  rttUs: 1000,
  rttJitterUs: 0,
  durationMs: 2000,
  arrivals: 'poisson',
  skew: 0,
  seed: 1,
};

/** The most requests one run simulates. */
export const MAX_FLEET_REQUESTS = 50_000_000;

const whole = (n: number, least: number): boolean => Number.isSafeInteger(n) && n >= least;

/** Checks a run's options; a SimulatorError names the flag at fault and what would be right. */
export function checkFleetOptions(o: FleetOptions): FleetOptions {
  const fail = (flag: string, problem: string): never => {
    throw new SimulatorError(`--${flag}`, problem);
  };
  if (!whole(o.instances, 1) || o.instances > 100_000) {
    fail('instances', `must be an integer from 1 to 100000, got ${o.instances}`);
  }
  if (!whole(o.ratePerSecond, 1)) fail('rate', `must be an integer >= 1 (requests per second), got ${o.ratePerSecond}`);
  if (!(FLEET_ALGORITHMS as readonly string[]).includes(o.algorithm)) {
    fail('algorithm', `must be one of ${FLEET_ALGORITHMS.join(', ')} (the algorithms that lease), got ${o.algorithm}`);
  }
  if (!whole(o.limit, 1)) fail('limit', `must be an integer >= 1, got ${o.limit}`);
  if (!whole(o.windowMs, 1)) fail('window', `must be a whole number of ms >= 1, got ${o.windowMs}`);
  if (!whole(o.lease, 2)) fail('lease', `must be an integer >= 2 (units one take asks for), got ${o.lease}`);
  if (!(LEASE_MODES as readonly string[]).includes(o.growth)) {
    fail('growth', `must be one of ${LEASE_MODES.join(', ')}, got ${o.growth}`);
  }
  if (!whole(o.rttUs, 0) || o.rttUs > 10_000_000) fail('rtt', `must be from 0 to 10s, got ${o.rttUs} µs`);
  if (!whole(o.rttJitterUs, 0) || o.rttJitterUs > o.rttUs) {
    fail('rtt-jitter', `must be from 0 to the round trip (${o.rttUs} µs), got ${o.rttJitterUs} µs`);
  }
  if (!whole(o.durationMs, 1) || o.durationMs > 3_600_000)
    fail('duration', `must be from 1ms to 1h, got ${o.durationMs} ms`);
  if (!(ARRIVAL_KINDS as readonly string[]).includes(o.arrivals)) {
    fail('arrivals', `must be one of ${ARRIVAL_KINDS.join(', ')}, got ${o.arrivals}`);
  }
  if (!Number.isFinite(o.skew) || o.skew < 0 || o.skew > 4) fail('skew', `must be a number from 0 to 4, got ${o.skew}`);
  if (!whole(o.seed, 0) || o.seed > 0xffff_ffff) fail('seed', `must be an integer from 0 to 4294967295, got ${o.seed}`);
  const requests = (o.ratePerSecond * o.durationMs) / 1000;
  if (requests > MAX_FLEET_REQUESTS) {
    fail(
      'rate',
      `${o.ratePerSecond}/s for ${o.durationMs} ms is ${requests} requests; at most ${MAX_FLEET_REQUESTS} are simulated (lower --rate or --duration)`,
    );
  }
  return o;
}

/** `1ms`, `250us`, `0`, or a duration as in policies: the round trip in µs, or undefined when unreadable. */
export function parseMicros(text: string): number | undefined {
  const micros = /^(\d+)us$/.exec(text);
  if (micros !== null) return Number(micros[1]);
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const ms = parseWindow(text);
  return ms === undefined ? undefined : ms * 1000;
}
