import type { ResolvedPolicy } from '../../../lib/policy/policy.types.js';
import { ADMITTED, DENIED, niceStep, panel, TRAILING, trailingScale, xml } from './panel.js';
import type { SimulationResult } from './run.js';
import { formatMs } from './traffic.js';

const WIDTH = 960;
const LEFT = 56;
const RIGHT = 64;
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';

/** `100 per 1m (burst 150)`: the policy as its flags would write it. */
export function describePolicy(policy: ResolvedPolicy): string {
  const bucket = policy.algorithm === 'token-bucket' || policy.algorithm === 'gcra';
  const burst = bucket && policy.capacity !== policy.limit ? ` (burst ${policy.capacity})` : '';
  return `${policy.limit} per ${formatMs(policy.windowMs)}${burst}`;
}

/** The numbers a chart shows, as embedded in its `<metadata>` for programs (and tests) to read. */
export interface ChartData {
  readonly algorithm: string;
  readonly policy: { readonly limit: number; readonly windowMs: number; readonly capacity: number };
  readonly traffic: string;
  readonly durationMs: number;
  readonly bucketMs: number;
  readonly admitted: number;
  readonly denied: number;
  readonly admittedUnits: number;
  readonly busiestWindow: { readonly fromMs: number; readonly units: number };
}

function dataOf(r: SimulationResult): ChartData {
  const { algorithm, limit, windowMs, capacity } = r.policy;
  return {
    algorithm,
    policy: { limit, windowMs, capacity },
    traffic: r.traffic.name,
    durationMs: r.traffic.durationMs,
    bucketMs: r.bucketMs,
    admitted: r.admitted,
    denied: r.denied,
    admittedUnits: r.admittedUnits,
    busiestWindow: r.busiestWindow,
  };
}

function summary(r: SimulationResult): string {
  const unit = r.decisions.some((d) => d.cost !== 1) ? 'units' : '';
  return (
    `admitted ${r.admitted}, denied ${r.denied} of ${r.decisions.length}; ` +
    `most ${unit ? `${unit} ` : ''}admitted in any ${formatMs(r.policy.windowMs)}: ${r.busiestWindow.units}`
  );
}

function legend(x: number, y: number, windowMs: number): string {
  return [
    `<rect x="${x}" y="${y - 9}" width="10" height="10" fill="${ADMITTED}"/>`,
    `<text x="${x + 14}" y="${y}" font-size="12" fill="#222">admitted</text>`,
    `<rect x="${x + 80}" y="${y - 9}" width="10" height="10" fill="${DENIED}"/>`,
    `<text x="${x + 94}" y="${y}" font-size="12" fill="#222">denied</text>`,
    `<line x1="${x + 150}" x2="${x + 170}" y1="${y - 4}" y2="${y - 4}" stroke="${TRAILING}" stroke-width="1.5"/>`,
    `<text x="${x + 174}" y="${y}" font-size="12" fill="${TRAILING}">admitted in the last ${formatMs(windowMs)}</text>`,
    `<line x1="${x + 150}" x2="${x + 170}" y1="${y + 14}" y2="${y + 14}" stroke="#777" stroke-dasharray="4 3"/>`,
    `<text x="${x + 174}" y="${y + 18}" font-size="12" fill="#222">window edge</text>`,
  ].join('\n');
}

function document(
  height: number,
  title: string,
  lines: readonly string[],
  windowMs: number,
  data: unknown,
  body: string,
): string {
  // JSON inside XML text: escaping <, > and & as \u escapes keeps it both valid XML and the same JSON.
  const json = JSON.stringify(data).replace(/[<>&]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  const text = lines.map(
    (line, i) => `<text x="${LEFT}" y="${46 + i * 18}" font-size="13" fill="#444">${xml(line)}</text>`,
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" ` +
      `role="img" aria-label="${xml(title)}" ${FONT}>`,
    `<title>${xml(title)}</title>`,
    `<desc>${xml(lines.join('. '))}</desc>`,
    `<metadata id="simulation">${json}</metadata>`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    `<text x="${LEFT}" y="24" font-size="16" font-weight="600" fill="#111">${xml(title)}</text>`,
    ...text,
    legend(WIDTH - 330, 24, windowMs),
    body,
    '</svg>',
    '',
  ].join('\n');
}

const barsMaxOf = (results: readonly SimulationResult[]): number =>
  niceStep(Math.max(1, ...results.flatMap((r) => r.buckets.map((b) => b.admitted + b.denied))));

/**
 * The SVG chart of one simulation: requests admitted and denied per time bucket, the units admitted in the
 * last window against the limit, the policy and the traffic in the title, the totals; and the numbers in
 * `<metadata id="simulation">` (JSON) and in `data-*` attributes of each bar (`data-start-ms`, `data-end-ms`,
 * `data-admitted`, `data-denied`).
 * @example writeFileSync('gcra.svg', chartSvg(simulate(policy, traffic)))
 */
export function chartSvg(r: SimulationResult): string {
  const title = `${r.policy.algorithm}: ${describePolicy(r.policy)}, on ${r.traffic.name}`;
  const lines = [r.traffic.description, summary(r)];
  const top = 104;
  const frame = {
    ...{ x: LEFT, y: top, width: WIDTH - LEFT - RIGHT, height: 220 },
    ...{ barsMax: barsMaxOf([r]), trailingMax: trailingScale([r]) },
  };
  const body = panel(
    r,
    frame,
    `requests per ${formatMs(r.bucketMs)} (bars, left); admitted in the last window (line, right)`,
  );
  return document(top + frame.height + 32, title, lines, r.policy.windowMs, dataOf(r), body);
}

/**
 * Several algorithms on one traffic pattern, one panel each, on the same scales; `<metadata>` holds an array
 * with one entry per panel, in order, and each panel's `<g class="panel">` carries `data-algorithm`.
 * @example writeFileSync('all.svg', comparisonSvg(ALGORITHMS.map((a) => simulate(policyFor(a), traffic))))
 */
export function comparisonSvg(results: readonly SimulationResult[]): string {
  const first = results[0];
  if (first === undefined) throw new Error('nest-rate-limit: comparisonSvg needs at least one result');
  const withBurst = results.find((r) => r.policy.capacity !== r.policy.limit) ?? first;
  const title = `${results.length} algorithms: ${describePolicy(withBurst.policy)}, on ${first.traffic.name}`;
  const lines = [
    first.traffic.description,
    `bars: requests per ${formatMs(first.bucketMs)} (left axis); line: admitted in the last ${formatMs(first.policy.windowMs)} (right axis)`,
  ];
  const top = 112;
  const height = 130;
  const pitch = height + 52;
  const scales = { barsMax: barsMaxOf(results), trailingMax: trailingScale(results) };
  const body = results.map((r, i) =>
    panel(
      r,
      { x: LEFT, y: top + i * pitch, width: WIDTH - LEFT - RIGHT, height, ...scales },
      `${r.policy.algorithm}: ${summary(r)}`,
    ),
  );
  return document(
    top + results.length * pitch - 12,
    title,
    lines,
    first.policy.windowMs,
    results.map(dataOf),
    body.join('\n'),
  );
}
