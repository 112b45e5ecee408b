import { chartHead, type Frame, r2, sx, timeAxes } from '../time-frame.js';
import { niceStep, TRAILING, xml } from '../panel.js';
import { formatMs } from '../traffic.js';
import { callsPerRequest, limitPerSecond, modeOf, mostShort } from './report.js';
import type { FleetResult } from './run.js';

const WIDTH = 960;
const LEFT = 64;
const GAP = 88;
const PANEL_WIDTH = (WIDTH - LEFT - GAP - 40) / 2;
const HEIGHT = 150;
const PITCH = HEIGHT + 78;
/** Each lease mode's line: no lease grey, the engine's growing takes the simulator's blue. */
const COLOURS: Readonly<Record<string, string>> = { off: '#777', growing: TRAILING };
/** The store-calls axis: from 1 call in 10,000 requests to 1 per request, logarithmic. */
const LEAST_CALLS = 1e-4;

const count = (n: number): string => Math.round(n).toLocaleString('en-US');

/** The numbers of one run, as `<metadata id="fleet">` holds them (JSON, one entry per run). */
export interface FleetChartData {
  readonly algorithm: string;
  readonly growth: string;
  readonly lease: number;
  readonly instances: number;
  readonly ratePerSecond: number;
  readonly limit: number;
  readonly windowMs: number;
  readonly rttUs: number;
  readonly rttJitterUs: number;
  readonly offered: number;
  readonly admitted: number;
  readonly storeCalls: number;
  readonly callsPerRequest: number;
  readonly bound: { readonly most: number; readonly allowed: number };
  readonly mostShort?: number;
}

export function chartDataOf(r: FleetResult): FleetChartData {
  const { options: o, policy } = r;
  return {
    ...{ algorithm: policy.algorithm, growth: o.growth, lease: o.lease, instances: o.instances },
    ...{
      ratePerSecond: o.ratePerSecond,
      limit: policy.limit,
      windowMs: policy.windowMs,
      rttUs: o.rttUs,
      rttJitterUs: o.rttJitterUs,
    },
    ...{ offered: r.offered, admitted: r.admitted, storeCalls: r.storeCalls, callsPerRequest: callsPerRequest(r) },
    bound: { most: r.bound.most, allowed: r.bound.allowed },
    ...(policy.algorithm === 'fixed-window' ? { mostShort: mostShort(r) } : {}),
  };
}

/** The time axes of this chart's panels: about 5 labels of time. */
const axes = (f: Frame, ticks: readonly [number, string][], heading: string): string[] =>
  timeAxes(f, ticks, heading, 5);

function line(f: Frame, r: FleetResult, y: (slot: FleetResult['slots'][number]) => number, cls: string): string {
  const points = r.slots.map((s) => `${sx(f, (s.startMs + s.endMs) / 2)} ${r2(y(s))}`);
  const colour = COLOURS[r.options.growth] ?? '#000';
  return `<path class="${cls}" data-growth="${r.options.growth}" d="M${points.join('L')}" fill="none" stroke="${colour}" stroke-width="1.5"/>`;
}

/** One algorithm's row: admitted per second against the limit (left), store calls per request (right, log scale). */
function row(runs: readonly FleetResult[], y: number): string {
  const first = runs[0] as FleetResult;
  const durationMs = first.options.durationMs;
  const left: Frame = { x: LEFT, y, width: PANEL_WIDTH, height: HEIGHT, durationMs };
  const right: Frame = { x: LEFT + PANEL_WIDTH + GAP, y, width: PANEL_WIDTH, height: HEIGHT, durationMs };
  const limit = limitPerSecond(first);
  const peak = Math.max(limit * 1.25, ...runs.flatMap((r) => r.slots.map((s) => (s.admitted * 1000) / r.slotMs)));
  const top = niceStep(peak);
  const ya = (perSecond: number) => y + HEIGHT - (perSecond / top) * HEIGHT;
  const yc = (calls: number) => y + HEIGHT * (Math.log10(Math.max(calls, LEAST_CALLS)) / Math.log10(LEAST_CALLS));
  const aTicks: [number, string][] = [0, 0.25, 0.5, 0.75, 1].map((q) => [r2(ya(q * top)), count(q * top)]);
  const cTicks: [number, string][] = [1, 0.1, 0.01, 0.001, 0.0001].map((c) => [r2(yc(c)), String(c)]);
  const rate = (s: FleetResult['slots'][number], r: FleetResult) => (s.admitted * 1000) / r.slotMs;
  const per = (s: FleetResult['slots'][number]) => (s.offered === 0 ? LEAST_CALLS : s.storeCalls / s.offered);
  const summary = runs.map((r) => `${r.options.growth}: ${callsPerRequest(r).toFixed(3)}`).join(', ');
  return [
    `<g class="fleet-row" data-algorithm="${first.policy.algorithm}">`,
    ...axes(left, aTicks, `${first.policy.algorithm}: admitted per second (limit ${count(limit)}/s dashed)`),
    `<line x1="${left.x}" x2="${left.x + PANEL_WIDTH}" y1="${r2(ya(limit))}" y2="${r2(ya(limit))}" stroke="#222" stroke-dasharray="4 3"/>`,
    ...runs.map((r) => line(left, r, (s) => ya(rate(s, r)), 'admitted')),
    ...axes(right, cTicks, `store calls per request (${summary})`),
    ...runs.map((r) => line(right, r, (s) => yc(per(s)), 'calls')),
    '</g>',
  ].join('\n');
}

function legend(x: number, y: number, runs: readonly FleetResult[]): string {
  const modes = [...new Set(runs.map(modeOf))];
  return modes
    .map((mode, i) => {
      const growth = mode === 'lease off' ? 'off' : (mode.split(' ')[1] ?? 'off');
      const at = x + i * 150;
      return (
        `<line x1="${at}" x2="${at + 20}" y1="${y - 4}" y2="${y - 4}" stroke="${COLOURS[growth]}" stroke-width="2"/>` +
        `<text x="${at + 24}" y="${y}" font-size="12" fill="#222">${xml(mode)}</text>`
      );
    })
    .join('\n');
}

/**
 * The SVG chart of fleet runs, one row per algorithm (in the order of `runs`), each comparing its lease modes:
 * admitted per second against the limit, and store calls per request on a log scale; `<metadata id="fleet">`
 * holds each run's numbers (FleetChartData), and each row's `<g class="fleet-row">` carries `data-algorithm`.
 * @example writeFileSync('fleet.svg', fleetSvg([await runFleet({ growth: 'off' }), await runFleet({ growth: 'growing' })]))
 */
export function fleetSvg(runs: readonly FleetResult[]): string {
  const first = runs[0];
  if (first === undefined) throw new Error('nest-rate-limit: fleetSvg needs at least one run');
  const algorithms = [...new Set(runs.map((r) => r.policy.algorithm))];
  const o = first.options;
  const title = `A fleet of ${o.instances} instances, ${count(o.ratePerSecond)} requests/s to one key`;
  const sub =
    `${o.arrivals} arrivals, ${count(first.policy.limit)} per ${formatMs(first.policy.windowMs)}, lease ${o.lease}, ` +
    `store round trip ${o.rttUs / 1000} ms${o.rttJitterUs > 0 ? ` (± ${o.rttJitterUs / 2000} ms each way)` : ''}, ${formatMs(o.durationMs)} simulated, seed ${o.seed}`;
  const top = 96;
  const height = top + algorithms.length * PITCH;
  return [
    ...chartHead({ width: WIDTH, height, title, sub, left: LEFT, id: 'fleet', data: runs.map(chartDataOf) }),
    legend(LEFT, 68, runs),
    ...algorithms.map((a, i) =>
      row(
        runs.filter((r) => r.policy.algorithm === a),
        top + i * PITCH,
      ),
    ),
    '</svg>',
    '',
  ].join('\n');
}
