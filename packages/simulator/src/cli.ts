#!/usr/bin/env node
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

import { durationFlag, integerFlag, parseFlags, UsageError } from './cli-flags.js';
import { parseWindow } from '../../../lib/policy/window.js';
import {
  NOT_SIMULATED,
  PATTERNS,
  runSimulation,
  SIMULATED_ALGORITHMS,
  SimulatorError,
  type SimulationRequest,
} from './index.js';
import { fleetSvg, fleetTable, FLEET_HELP, parseSimulateFleet, runFleet, type FleetResult } from './fleet/index.js';
import {
  parseSimulateShedding,
  runShedding,
  SHEDDING_HELP,
  sheddingSummary,
  sheddingSvg,
  sheddingTable,
  type SheddingResult,
} from './shedding/index.js';
import { formatMs } from './traffic.js';

const HELP = `Usage (from a clone of the repository): npm run simulate -- [flags]

Runs the real algorithm steps on a fake clock over a traffic pattern and writes an SVG chart of the requests
admitted (green) and denied (red) over time. No network, no browser.

Flags:
  --algorithm <name>   ${SIMULATED_ALGORITHMS.join(', ')}, or all (the five side by side); default all
  --limit <n>          requests per window, an integer >= 1; default 100
  --window <duration>  as in policies: ms, or '500ms', '10s', '1m', '1h', '1d'; default 1m
  --burst <n>          token-bucket and gcra capacity; default the limit
  --traffic <pattern>  ${PATTERNS.join(', ')}, or a JSON file: [0, 250, ...] (ms after the
                       start) or [{ "atMs": 0, "cost": 2 }, ...]; default boundary-burst
  --rate <n>           requests per window of the pattern (steady: 0.5 x limit, bursts: 1.5 x, boundary-burst:
                       1 x before the edge and 1 x after, ramp: up to 2 x)
  --duration <d>       how long to simulate, like --window; default 2 to 4 windows by pattern
  --out <file.svg>     where to write the chart; default <algorithm>-<traffic>.svg
  --help               this text

Example:
  npm run simulate -- --algorithm gcra --limit 100 --window 1m --traffic boundary-burst --out gcra.svg
`;

const FLAGS = ['algorithm', 'limit', 'window', 'burst', 'traffic', 'rate', 'duration', 'out', 'help'] as const;

/** The request a `simulate` command line asks for, and where to write its chart. */
export function parseSimulate(args: readonly string[]): { request: SimulationRequest; out: string } | 'help' {
  const flags = parseFlags(args, FLAGS);
  if (flags.help !== undefined) return 'help';
  const algorithm = flags.algorithm ?? 'all';
  if (Object.hasOwn(NOT_SIMULATED, algorithm)) {
    const why = NOT_SIMULATED[algorithm as keyof typeof NOT_SIMULATED];
    throw new UsageError(`--algorithm ${algorithm} is not simulated: ${why}`);
  }
  if (algorithm !== 'all' && !(SIMULATED_ALGORITHMS as readonly string[]).includes(algorithm)) {
    throw new UsageError(
      `--algorithm must be one of ${SIMULATED_ALGORITHMS.join(', ')} or all, got ${JSON.stringify(algorithm)}`,
    );
  }
  const traffic = flags.traffic ?? 'boundary-burst';
  const pattern = (PATTERNS as readonly string[]).includes(traffic);
  if (flags.rate !== undefined && !pattern) {
    throw new UsageError(`--rate shapes the named patterns (${PATTERNS.join(', ')}), not a file of arrivals`);
  }
  const durationGiven = flags.duration === undefined ? undefined : durationFlag('duration', flags.duration);
  const request: SimulationRequest = {
    algorithm: algorithm as SimulationRequest['algorithm'],
    limit: integerFlag('limit', flags.limit, 100) as number,
    window: durationFlag('window', flags.window ?? '1m'),
    burst: integerFlag('burst', flags.burst),
    traffic,
    ratePerWindow: integerFlag('rate', flags.rate),
    durationMs: durationGiven === undefined ? undefined : parseWindow(durationGiven),
  };
  const base = pattern ? traffic : 'traffic';
  const out = flags.out ?? `${algorithm}-${base}.svg`;
  if (!out.endsWith('.svg')) throw new UsageError(`--out must name an .svg file, got ${JSON.stringify(out)}`);
  return { request, out };
}

/** `simulate-fleet`: each algorithm × lease mode asked for, a table each, and one chart of them all. */
async function simulateFleet(args: readonly string[]): Promise<number> {
  const parsed = parseSimulateFleet(args);
  if (parsed === 'help') {
    process.stdout.write(FLEET_HELP);
    return 0;
  }
  const started = process.cpuUsage();
  const runs: FleetResult[] = [];
  for (const algorithm of parsed.algorithms) {
    for (const growth of parsed.growths) {
      const run = await runFleet({ ...parsed.base, algorithm, growth });
      process.stdout.write(`${fleetTable(run)}\n`);
      runs.push(run);
    }
  }
  const path = resolve(parsed.out);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, fleetSvg(runs));
  const cpu = process.cpuUsage(started);
  process.stdout.write(`wrote ${parsed.out} (${((cpu.user + cpu.system) / 1e6).toFixed(1)} s of CPU)\n`);
  return 0;
}

/** `simulate-shedding`: each scenario × variant asked for, a table each, a summary, and one chart of them all. */
function simulateShedding(args: readonly string[]): number {
  const parsed = parseSimulateShedding(args);
  if (parsed === 'help') {
    process.stdout.write(SHEDDING_HELP);
    return 0;
  }
  const started = process.cpuUsage();
  const runs: SheddingResult[] = [];
  for (const options of parsed.runs) {
    const run = runShedding(options);
    process.stdout.write(`${sheddingTable(run)}\n`);
    runs.push(run);
  }
  process.stdout.write(sheddingSummary(runs));
  const path = resolve(parsed.out);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, sheddingSvg(runs));
  const cpu = process.cpuUsage(started);
  process.stdout.write(`wrote ${parsed.out} (${((cpu.user + cpu.system) / 1e6).toFixed(1)} s of CPU)\n`);
  return 0;
}

/** How each command is run from a clone of the repository (the package has no `npx` command). */
const RUN = {
  simulate: 'npm run simulate --',
  'simulate-fleet': 'npm run simulate:fleet --',
  'simulate-shedding': 'npx nest-rate-limit-simulate simulate-shedding',
} as const;

/** Runs the command line; returns the exit code (0 done, 1 failed, 2 a mistake in the command line). */
export async function main(args: readonly string[]): Promise<number> {
  const [command, ...rest] = args;
  try {
    if (command === undefined) {
      process.stderr.write(HELP);
      return 2;
    }
    if (command === '--help' || command === '-h' || command === 'help') {
      process.stdout.write(`${HELP}\n${FLEET_HELP}\n${SHEDDING_HELP}`);
      return 0;
    }
    if (command === 'simulate-fleet') return await simulateFleet(rest);
    if (command === 'simulate-shedding') return simulateShedding(rest);
    if (command !== 'simulate') {
      throw new UsageError(
        `unknown command ${JSON.stringify(command)}: the commands are simulate, simulate-fleet and simulate-shedding`,
      );
    }
    const parsed = parseSimulate(rest);
    if (parsed === 'help') {
      process.stdout.write(HELP);
      return 0;
    }
    const { svg, results } = runSimulation(parsed.request);
    const path = resolve(parsed.out);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, svg);
    for (const r of results) {
      process.stdout.write(
        `${r.policy.algorithm}: admitted ${r.admitted}, denied ${r.denied}; most admitted in any ` +
          `${formatMs(r.policy.windowMs)} span: ${r.busiestWindow.units}\n`,
      );
    }
    process.stdout.write(`wrote ${parsed.out}\n`);
    return 0;
  } catch (error) {
    const name = command === 'simulate-fleet' || command === 'simulate-shedding' ? command : 'simulate';
    if (error instanceof UsageError || error instanceof SimulatorError) {
      process.stderr.write(`${name}: ${error.message}\nRun \`${RUN[name]} --help\` for the flags.\n`);
      return 2;
    }
    process.stderr.write(`${name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  }
}

// A reader that closes early (`| head -1`) is not a failure: the rest of the output has nowhere to go.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(0);
});
process.exitCode = await main(process.argv.slice(2));
