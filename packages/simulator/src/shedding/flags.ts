import { durationFlag, integerFlag, parseFlags, UsageError } from '../cli-flags.js';
import { parseWindow } from '../../../../lib/policy/window.js';
import { SHEDDING_DEFAULTS, sheddingSettings } from '../../../../lib/shedding/shedding-options.js';
import {
  checkSheddingOptions,
  SCENARIO_DEFAULTS,
  SHEDDING_SCENARIOS,
  SHEDDING_SIM_DEFAULTS,
  SHEDDING_VARIANTS,
  type SheddingScenario,
  type SheddingSimOptions,
  type SheddingVariant,
} from './options.js';

export const SHEDDING_HELP = `Usage (from a clone of the repository):
  npm run build:simulator && npx nest-rate-limit-simulate simulate-shedding [flags]

Simulates one app instance in front of a dependency of fixed capacity (a FIFO queue before a number of requests
served at once), offered open-loop Poisson traffic of three criticalities, in fake time, with shedding off, with
the library's LoadShedder (Gradient2 fed one mean latency a 1 s window), and with its criticality ceilings over
Netflix's VegasLimit fed each request; prints per 5 simulated seconds the goodput (responses within the client's
timeout), the critical requests' latency, the refusals by criticality and the limit, and writes an SVG chart.

Flags:
  --scenario <name>     ${SHEDDING_SCENARIOS.join(', ')}, or all (default): the load rising from 0.5x to 4x the
                        capacity, or a steady 1.5x while the service time doubles halfway through
  --variant <name>      ${SHEDDING_VARIANTS.join(', ')}, or all (default)
  --concurrency <n>     requests the dependency serves at once; default 10
  --service <d>         its service time: '20ms' (default); capacity = concurrency x 1000 / ms a second
  --slower-service <d>  slower-deploy: the service time from halfway through; default 40ms
  --jitter <f>          each service time varies uniformly by up to +- this fraction; default 0.5
  --load-from <x>       the offered rate at the start, x the capacity; default 0.5 (slower-deploy 1.5)
  --load-to <x>         the offered rate at the end (linear in between); default 4 (slower-deploy 1.5)
  --mix <c,d,s>         percent critical, default and sheddable; default 20,50,30
  --timeout <d>         how long a client waits; default 1s
  --duration <d>        how long to simulate; default 60s
  --min-limit <n>       the shedding option's minLimit, for every limit; default ${SHEDDING_DEFAULTS.minLimit}
  --max-limit <n>       its maxLimit; default ${SHEDDING_DEFAULTS.maxLimit}
  --initial-limit <n>   its initialLimit; default ${SHEDDING_DEFAULTS.initialLimit}
  --reserve <f>         its reserve (the share of the limit only critical requests may use); default ${SHEDDING_DEFAULTS.reserve}
  --vegas-probe <n>     Vegas probes for a new no-load latency every n x limit samples, as Netflix's current
                        VegasLimit does with 30; default 0 (never: the least latency seen stays)
  --seed <n>            the random seed; default 1
  --out <file.svg>      where to write the chart; default shedding.svg
  --help                this text

The defaults (2 scenarios x 3 variants, about 340,000 requests in all) take about 1 s of CPU.

Example:
  npx nest-rate-limit-simulate simulate-shedding --scenario rising-load --load-to 8 --out overload.svg
`;

const FLAGS = [
  ...['scenario', 'variant', 'concurrency', 'service', 'slower-service', 'jitter', 'load-from', 'load-to', 'mix'],
  ...['timeout', 'duration', 'min-limit', 'max-limit', 'initial-limit', 'reserve', 'vegas-probe', 'seed', 'out'],
  'help',
] as const;

/** What a `simulate-shedding` command line asks for: each scenario × variant, and the chart's file. */
export interface SheddingCommand {
  readonly runs: readonly SheddingSimOptions[];
  readonly out: string;
}

function oneOf<T extends string>(flag: string, value: string, values: readonly T[]): readonly T[] {
  if (value === 'all') return values;
  if (!(values as readonly string[]).includes(value)) {
    throw new UsageError(`--${flag} must be one of ${values.join(', ')} or all, got ${JSON.stringify(value)}`);
  }
  return [value as T];
}

function numberFlag(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) {
    throw new UsageError(`--${flag} must be a number, got ${JSON.stringify(value)}`);
  }
  return n;
}

function mixFlag(value: string | undefined): SheddingSimOptions['mix'] | undefined {
  if (value === undefined) return undefined;
  const parts = value.split(',').map(Number);
  const [critical, dflt, sheddable] = parts;
  if (
    parts.length !== 3 ||
    parts.some((p) => !Number.isFinite(p) || p < 0) ||
    critical === undefined ||
    dflt === undefined ||
    sheddable === undefined ||
    critical + dflt + sheddable !== 100
  ) {
    throw new UsageError(
      `--mix must be three percentages (critical,default,sheddable) that add up to 100, got ${JSON.stringify(value)}`,
    );
  }
  return { critical: critical / 100, default: dflt / 100, sheddable: sheddable / 100 };
}

/** Parses a `simulate-shedding` command line; a UsageError or SimulatorError names the flag and what would be right. */
export function parseSimulateShedding(args: readonly string[]): SheddingCommand | 'help' {
  const flags = parseFlags(args, FLAGS);
  if (flags.help !== undefined) return 'help';
  const scenarios = oneOf('scenario', flags.scenario ?? 'all', SHEDDING_SCENARIOS);
  const variants = oneOf('variant', flags.variant ?? 'all', SHEDDING_VARIANTS);
  const ms = (flag: string, value: string | undefined) =>
    value === undefined ? undefined : (parseWindow(durationFlag(flag, value)) as number);
  const seed = flags.seed === undefined ? undefined : Number(flags.seed);
  if (flags.seed !== undefined && !/^\d+$/.test(flags.seed)) {
    throw new UsageError(`--seed must be an integer >= 0, got ${JSON.stringify(flags.seed)}`);
  }
  const probe = flags['vegas-probe'];
  if (probe !== undefined && !/^\d+$/.test(probe)) {
    throw new UsageError(`--vegas-probe must be an integer >= 0 (0: never), got ${JSON.stringify(probe)}`);
  }
  const asked: Partial<Record<keyof SheddingSimOptions, unknown>> = {
    concurrency: integerFlag('concurrency', flags.concurrency),
    serviceMs: ms('service', flags.service),
    slowerServiceMs: ms('slower-service', flags['slower-service']),
    serviceJitter: numberFlag('jitter', flags.jitter),
    loadFrom: numberFlag('load-from', flags['load-from']),
    loadTo: numberFlag('load-to', flags['load-to']),
    mix: mixFlag(flags.mix),
    timeoutMs: ms('timeout', flags.timeout),
    durationMs: ms('duration', flags.duration),
    vegasProbe: probe === undefined ? undefined : Number(probe),
    seed,
  };
  const given = Object.fromEntries(Object.entries(asked).filter(([, v]) => v !== undefined));
  const bounds = {
    minLimit: integerFlag('min-limit', flags['min-limit']),
    maxLimit: integerFlag('max-limit', flags['max-limit']),
    initialLimit: integerFlag('initial-limit', flags['initial-limit']),
    reserve: numberFlag('reserve', flags.reserve),
  };
  if (Object.values(bounds).some((v) => v !== undefined)) {
    const option = Object.fromEntries(Object.entries(bounds).filter(([, v]) => v !== undefined));
    try {
      given.shedding = sheddingSettings({ ...option, maxEventLoopDelay: 0 });
    } catch (error) {
      // "nest-rate-limit: option "shedding.maxLimit" must be ..." as the flag that set it
      const message = (error as Error).message.replace(
        /^nest-rate-limit: option "shedding\.(\w+)"/,
        (_, field: string) => {
          return `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
        },
      );
      throw new UsageError(message);
    }
  }
  const runs: SheddingSimOptions[] = [];
  for (const scenario of scenarios as readonly SheddingScenario[]) {
    for (const variant of variants as readonly SheddingVariant[]) {
      const options = { ...SHEDDING_SIM_DEFAULTS, ...SCENARIO_DEFAULTS[scenario], ...given, scenario, variant };
      runs.push(checkSheddingOptions(options));
    }
  }
  const out = flags.out ?? 'shedding.svg';
  if (!out.endsWith('.svg')) throw new UsageError(`--out must name an .svg file, got ${JSON.stringify(out)}`);
  return { runs, out };
}
