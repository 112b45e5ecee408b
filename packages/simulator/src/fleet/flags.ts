import { durationFlag, integerFlag, parseFlags, UsageError } from '../cli-flags.js';
import { parseWindow } from '../../../../lib/policy/window.js';
import {
  ARRIVAL_KINDS,
  checkFleetOptions,
  FLEET_ALGORITHMS,
  FLEET_DEFAULTS,
  LEASE_MODES,
  parseMicros,
  type ArrivalKind,
  type FleetAlgorithm,
  type FleetOptions,
  type LeaseMode,
} from './options.js';

export const FLEET_HELP = `Usage (from a clone of the repository): npm run simulate:fleet -- [flags]

Simulates a fleet of instances offering traffic to one hot key of a shared store, in virtual time, deciding
each request with the library's own DecisionEngine (its LeaseBook and cache of denials) on a shared store
whose calls take the round trip; prints per simulated second the requests
admitted against the limit, the store calls and each instance's share, and writes an SVG chart.

Flags:
  --instances <n>      instances in the fleet; default 100
  --rate <n>           requests per second the whole fleet offers; default 1000000
  --algorithm <name>   ${FLEET_ALGORITHMS.join(', ')}, or all; default fixed-window
  --limit <n>          the policy's limit per window; default 500000
  --window <duration>  as in policies: ms, or '500ms', '1s', '1m'; default 1s
  --burst <n>          token-bucket and gcra capacity; default the limit
  --lease <n>          the most units one take asks the store for (>= 2); default 100
  --growth <mode>      off (the policy has no lease) or growing (the engine's leases), or all; default all
  --rtt <duration>     a store call's round trip: '1ms', '250us', '0'; default 1ms
  --rtt-jitter <d>     how much each half of a round trip varies (uniformly, by up to ± half of it), at most
                       the round trip: '200us'; default 0
  --duration <d>       how long to simulate, like --window; default 2s
  --arrivals <kind>    ${ARRIVAL_KINDS.join(' or ')}; default poisson
  --skew <s>           instance i offers a share ∝ 1/(i+1)^s of the rate; default 0 (even)
  --seed <n>           the random seed; default 1
  --out <file.svg>     where to write the chart; default fleet-<algorithm>.svg
  --help               this text

At the defaults (1,000,000 requests a second for 2 s, two runs) it takes about 40 s of CPU: every request goes
through a DecisionEngine.

Example:
  npm run simulate:fleet -- --instances 100 --rate 1000000 --algorithm gcra --lease 100 --rtt 1ms --out gcra-fleet.svg
`;

const FLAGS = [
  ...['instances', 'rate', 'algorithm', 'limit', 'window', 'burst', 'lease', 'growth', 'rtt', 'rtt-jitter'],
  'duration',
  ...['arrivals', 'skew', 'seed', 'out', 'help'],
] as const;

/** What a `simulate-fleet` command line asks for: the runs (each algorithm × each lease mode) and the chart's file. */
export interface FleetCommand {
  readonly base: FleetOptions;
  readonly algorithms: readonly FleetAlgorithm[];
  readonly growths: readonly LeaseMode[];
  readonly out: string;
}

function oneOf<T extends string>(flag: string, value: string, values: readonly T[], all: boolean): readonly T[] {
  if (all && value === 'all') return values;
  if (!(values as readonly string[]).includes(value)) {
    throw new UsageError(
      `--${flag} must be one of ${values.join(', ')}${all ? ' or all' : ''}${flag === 'algorithm' ? ' (the algorithms whose units an instance can lease)' : ''}, got ${JSON.stringify(value)}`,
    );
  }
  return [value as T];
}

/** Parses a `simulate-fleet` command line; a UsageError or SimulatorError names the flag and what would be right. */
export function parseSimulateFleet(args: readonly string[]): FleetCommand | 'help' {
  const flags = parseFlags(args, FLAGS);
  if (flags.help !== undefined) return 'help';
  const algorithms = oneOf('algorithm', flags.algorithm ?? 'fixed-window', FLEET_ALGORITHMS, true);
  const growths = oneOf('growth', flags.growth ?? 'all', LEASE_MODES, true);
  const [arrivals] = oneOf('arrivals', flags.arrivals ?? FLEET_DEFAULTS.arrivals, ARRIVAL_KINDS, false);
  const micros = (flag: 'rtt' | 'rtt-jitter', fallback: string): number => {
    const us = parseMicros(flags[flag] ?? fallback);
    if (us !== undefined) return us;
    throw new UsageError(
      `--${flag} must be a duration like '1ms', '250us', '0' or '2s', got ${JSON.stringify(flags[flag])}`,
    );
  };
  const rttUs = micros('rtt', '1ms');
  const rttJitterUs = micros('rtt-jitter', '0');
  const skew = flags.skew === undefined ? 0 : Number(flags.skew);
  if (flags.skew !== undefined && (flags.skew.trim() === '' || !Number.isFinite(skew))) {
    throw new UsageError(`--skew must be a number from 0 to 4, got ${JSON.stringify(flags.skew)}`);
  }
  const seed = flags.seed === undefined ? FLEET_DEFAULTS.seed : Number(flags.seed);
  if (flags.seed !== undefined && !/^\d+$/.test(flags.seed)) {
    throw new UsageError(`--seed must be an integer >= 0, got ${JSON.stringify(flags.seed)}`);
  }
  const ms = (flag: string, value: string) => parseWindow(durationFlag(flag, value)) as number;
  const base: FleetOptions = {
    ...FLEET_DEFAULTS,
    instances: integerFlag('instances', flags.instances, FLEET_DEFAULTS.instances) as number,
    ratePerSecond: integerFlag('rate', flags.rate, FLEET_DEFAULTS.ratePerSecond) as number,
    limit: integerFlag('limit', flags.limit, FLEET_DEFAULTS.limit) as number,
    windowMs: ms('window', flags.window ?? '1s'),
    burst: integerFlag('burst', flags.burst),
    lease: integerFlag('lease', flags.lease, FLEET_DEFAULTS.lease) as number,
    rttUs,
    rttJitterUs,
    durationMs: ms('duration', flags.duration ?? '2s'),
    arrivals: arrivals as ArrivalKind,
    skew,
    seed,
  };
  if (base.burst !== undefined && !algorithms.some((a) => a === 'token-bucket' || a === 'gcra')) {
    throw new UsageError(`--burst is the capacity of token-bucket and gcra, not of ${algorithms.join(', ')}`);
  }
  for (const algorithm of algorithms) checkFleetOptions({ ...base, algorithm });
  const out = flags.out ?? `fleet-${flags.algorithm ?? 'fixed-window'}.svg`;
  if (!out.endsWith('.svg')) throw new UsageError(`--out must name an .svg file, got ${JSON.stringify(out)}`);
  return { base, algorithms, growths, out };
}
