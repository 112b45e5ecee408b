import { chartHead } from '../time-frame.js';
import { xml } from '../panel.js';
import { formatMs } from '../traffic.js';
import { column, COLOURS, GAP, LEFT, PANEL_WIDTH, PITCH, WIDTH } from './chart-column.js';
import type { ByCriticality, Latency } from './counts.js';
import type { SheddingScenario, SheddingVariant } from './options.js';
import { labelOf } from './report.js';
import type { SheddingResult } from './run.js';

/** The numbers of one run, as `<metadata id="shedding">` holds them (JSON, one entry per run). */
export interface SheddingChartData {
  readonly scenario: SheddingScenario;
  readonly variant: SheddingVariant;
  readonly vegasProbe: number;
  readonly capacity: number;
  readonly goodput: number;
  readonly offered: ByCriticality;
  readonly good: ByCriticality;
  readonly shed: ByCriticality;
  readonly late: number;
  readonly critical: Latency;
}

export function sheddingChartDataOf(r: SheddingResult): SheddingChartData {
  const { scenario, variant, vegasProbe } = r.options;
  return {
    ...{ scenario, variant, vegasProbe, capacity: r.capacity, goodput: Math.round(r.goodput * 10) / 10 },
    ...{ offered: r.offered, good: r.good, shed: r.shed, late: r.late, critical: r.critical },
  };
}

function legend(x: number, y: number, runs: readonly SheddingResult[]): string {
  const seen = new Map<string, SheddingResult>();
  for (const r of runs) if (!seen.has(r.options.variant)) seen.set(r.options.variant, r);
  return [...seen.values()]
    .map((r, i) => {
      const at = x + i * 260;
      return (
        `<line x1="${at}" x2="${at + 20}" y1="${y - 4}" y2="${y - 4}" stroke="${COLOURS[r.options.variant]}" stroke-width="2"/>` +
        `<text x="${at + 24}" y="${y}" font-size="12" fill="#222">${xml(labelOf(r.options))}</text>`
      );
    })
    .join('\n');
}

/**
 * The SVG chart of shedding runs: one column per scenario (in the order of `runs`), each with three panels over
 * time comparing the variants: goodput per second against the dependency's capacity, the p99 latency of critical
 * requests against the client's timeout, and the limit; `<metadata id="shedding">` holds each run's totals
 * (SheddingChartData), and each column's `<g class="shedding-column">` carries `data-scenario`.
 * @example writeFileSync('shedding.svg', sheddingSvg(SHEDDING_VARIANTS.map((variant) => runShedding({ variant }))))
 */
export function sheddingSvg(runs: readonly SheddingResult[]): string {
  const first = runs[0];
  if (first === undefined) throw new Error('nest-rate-limit: sheddingSvg needs at least one run');
  const scenarios = [...new Set(runs.map((r) => r.options.scenario))];
  const o = first.options;
  const mix = `${o.mix.critical * 100}% critical, ${o.mix.default * 100}% default, ${o.mix.sheddable * 100}% sheddable`;
  const title = `Shedding load: one instance before a dependency of ${o.concurrency} at once, ${o.serviceMs} ms each`;
  const sub =
    `Poisson arrivals, ${mix}, service time ± ${Math.round(o.serviceJitter * 100)}%, clients wait ` +
    `${formatMs(o.timeoutMs)}, ${formatMs(o.durationMs)} simulated, seed ${o.seed}`;
  const top = 108;
  const height = top + 3 * PITCH - 20;
  return [
    ...chartHead({ width: WIDTH, height, title, sub, left: LEFT, id: 'shedding', data: runs.map(sheddingChartDataOf) }),
    legend(LEFT, 72, runs),
    ...scenarios.flatMap((scenario, i) =>
      column(
        runs.filter((r) => r.options.scenario === scenario),
        LEFT + i * (PANEL_WIDTH + GAP),
        top,
      ),
    ),
    '</svg>',
    '',
  ].join('\n');
}
