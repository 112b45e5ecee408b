import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { parse } from 'yaml';

import { loadMetrics, type RateLimitMetricOutcome } from '../../lib/metrics/otel-metrics.js';

// The Grafana dashboard (ops/grafana) and the Prometheus alert rules (ops/prometheus) query the module's metrics
// by their Prometheus names. Those names are not written down here: the module's own instruments are fed once
// each into the real SDK with the real Prometheus exporter, and the names and labels it exposes are what every
// query may use.

const DASHBOARD = 'ops/grafana/nest-rate-limit.json';
const RULES = 'ops/prometheus/nest-rate-limit.rules.yml';

/** Every outcome the module reports (the compiler holds this to RateLimitMetricOutcome, both ways). */
const OUTCOMES: Record<RateLimitMetricOutcome, true> = {
  allowed: true,
  denied: true,
  'shadow-denied': true,
  'failed-open': true,
  'failed-closed': true,
  'failed-local': true,
  'deny-cache': true,
  skipped: true,
};

/** Each sample name the exporter exposes, with the label names its samples carry. */
async function exposed(): Promise<Map<string, Set<string>>> {
  metrics.disable();
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  metrics.setGlobalMeterProvider(provider);
  const server = createServer((request, response) => exporter.getMetricsRequestHandler(request, response));
  try {
    const instruments = await loadMetrics(() => [['redis', true]]);
    if (instruments === undefined) throw new Error('loadMetrics made no instruments with a MeterProvider registered');
    for (const outcome of Object.keys(OUTCOMES) as RateLimitMetricOutcome[])
      instruments.decision('api', outcome, 'store');
    instruments.storeCall('redis', 'consume', 0.002);
    instruments.storeCall('redis', 'consume', 0.1, 'TimeoutError');
    instruments.slots('uploads', 1);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const names = new Map<string, Set<string>>();
    for (const [, name = '', labels = ''] of text.matchAll(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? \S+$/gm)) {
      const set = names.get(name) ?? new Set<string>();
      for (const [, label = ''] of labels.matchAll(/(\w+)="/g)) set.add(label);
      names.set(name, set);
    }
    return names;
  } finally {
    server.close();
    await provider.shutdown();
    metrics.disable();
  }
}

/** The PromQL of the dashboard's panels and variables. */
function dashboardQueries(): string[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: { title: string; type: string; targets?: { expr: string }[] }[];
    templating: { list: { query: unknown }[] };
  };
  const panels = dashboard.panels.filter((p) => p.type !== 'row');
  expect(panels.length).toBeGreaterThan(0);
  expect(panels.filter((p) => (p.targets?.length ?? 0) === 0).map((p) => p.title)).toEqual([]);
  const variables = dashboard.templating.list
    .map((v) => (typeof v.query === 'object' && v.query !== null ? (v.query as { query: string }).query : undefined))
    .filter((q): q is string => q !== undefined);
  return [...panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)), ...variables];
}

interface Rule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: string };
  annotations: { summary: string; description: string };
}

function rules(): Rule[] {
  const file = parse(readFileSync(RULES, 'utf8'), { strict: true, uniqueKeys: true }) as {
    groups: { name: string; rules: Rule[] }[];
  };
  return file.groups.flatMap((g) => g.rules);
}

const FUNCTIONS = new Set([
  'sum', 'max', 'min', 'avg', 'count', 'rate', 'irate', 'increase', 'histogram_quantile', 'label_values', 'by',
  'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset',
]); // prettier-ignore

/** The metric names, label names and `rate_limit_outcome` values a PromQL expression uses. */
function uses(expr: string): { metrics: string[]; labels: string[]; outcomes: string[] } {
  const labels: string[] = [];
  const outcomes: string[] = [];
  let rest = expr.replace(/\{([^}]*)\}/g, (_, matchers: string) => {
    for (const [, label = '', value = ''] of matchers.matchAll(/(\w+)\s*(?:=~|!~|!=|=)\s*"([^"]*)"/g)) {
      labels.push(label);
      if (label === 'rate_limit_outcome') outcomes.push(...value.split('|').filter((v) => v !== ''));
    }
    return ' ';
  });
  rest = rest.replace(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g, (_, list: string) => {
    labels.push(...list.split(',').map((l) => l.trim()));
    return ' ';
  });
  // label_values(metric, label): its second argument is a label.
  rest = rest.replace(/label_values\(\s*(\w+)\s*,\s*(\w+)\s*\)/g, (_, metric: string, label: string) => {
    labels.push(label);
    return ` ${metric} `;
  });
  rest = rest.replace(/"[^"]*"|\[[^\]]*\]|\$\w+/g, ' ');
  const found = [...rest.matchAll(/[a-zA-Z_:][\w:]*/g)].map(([word]) => word).filter((w) => !FUNCTIONS.has(w));
  return { metrics: found, labels: labels.filter((l) => l !== ''), outcomes };
}

describe('the operators files query the metrics the module exports (real SDK, real Prometheus exporter)', () => {
  let names: Map<string, Set<string>>;
  beforeAll(async () => {
    names = await exposed();
  });

  const queries = (): [string, string][] => [
    ...dashboardQueries().map((q): [string, string] => [DASHBOARD, q]),
    ...rules().map((r): [string, string] => [`${RULES} ${r.alert}`, r.expr]),
  ];

  it('exposes the names the files are written against', () => {
    // If the exporter's naming changes (unit suffixes such as _seconds), this says so before the queries do.
    expect([...names.keys()].filter((n) => n.startsWith('rate_limit_')).sort()).toEqual([
      'rate_limit_breaker_state',
      'rate_limit_concurrency_slots',
      'rate_limit_decisions_total',
      'rate_limit_store_duration_bucket',
      'rate_limit_store_duration_count',
      'rate_limit_store_duration_sum',
    ]);
  });

  it('uses only exported metric names, their labels and the outcomes the module reports', () => {
    const problems: string[] = [];
    for (const [where, expr] of queries()) {
      const used = uses(expr);
      expect(used.metrics.length).toBeGreaterThan(0);
      const known = new Set<string>();
      for (const metric of used.metrics) {
        const labels = names.get(metric);
        if (labels === undefined) problems.push(`${where}: ${metric} is not exported`);
        else for (const l of labels) known.add(l);
      }
      for (const label of used.labels) {
        if (!known.has(label)) problems.push(`${where}: label ${label} is not on ${used.metrics.join(', ')}`);
      }
      for (const outcome of used.outcomes) {
        if (!Object.hasOwn(OUTCOMES, outcome)) problems.push(`${where}: outcome ${outcome} is never reported`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('covers decisions by outcome and by source, store latency and errors, the breaker and the deny cache', () => {
    const all = queries().map(([, expr]) => expr);
    const some = (pattern: RegExp) => all.some((expr) => pattern.test(expr));
    expect([
      some(/by \(rate_limit_policy, rate_limit_outcome\)/),
      some(/histogram_quantile\(0\.99, .*rate_limit_store_duration_bucket/),
      some(/rate_limit_store_duration_count\{error_type!=""\}/),
      some(/rate_limit_breaker_state/),
      some(/rate_limit_outcome="deny-cache"/),
      some(/by \(rate_limit_source\)/),
    ]).toEqual([true, true, true, true, true, true]);
  });

  it('has alert rules for store errors, an open breaker and the denial rate, each complete', () => {
    const alerts = rules();
    expect(alerts.map((r) => r.alert)).toEqual([
      'RateLimitStoreErrors',
      'RateLimitBreakerOpen',
      'RateLimitHighDenialRate',
    ]);
    for (const r of alerts) {
      expect([r.alert, typeof r.expr, /^\d+[smh]$/.test(r.for), r.labels.severity]).toEqual([
        r.alert,
        'string',
        true,
        expect.stringMatching(/^(warning|critical)$/),
      ]);
      expect(r.annotations.summary.length).toBeGreaterThan(0);
    }
  });

  it('reads the expressions it checks (the checker itself)', () => {
    expect(uses('sum by (le, a) (rate(m_bucket{b="x", rate_limit_outcome=~"denied|deny-cache"}[5m])) / n')).toEqual({
      metrics: ['m_bucket', 'n'],
      labels: ['b', 'rate_limit_outcome', 'le', 'a'],
      outcomes: ['denied', 'deny-cache'],
    });
  });
});

describe('the dashboard preview on the operations page (ops/grafana/preview.mjs, in chromium)', () => {
  it('draws every panel of the JSON, in order, and says it is not Grafana', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-preview-'));
    try {
      const [png, html] = [join(dir, 'preview.png'), join(dir, 'preview.html')];
      const run = spawnSync(process.execPath, ['ops/grafana/preview.mjs', '--out', png, '--html', html], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
        panels: { id: number; type: string; title: string; gridPos: { x: number; y: number; w: number; h: number } }[];
      };
      const page = readFileSync(html, 'utf8');
      const drawn = [
        ...page.matchAll(/<div class="(panel|row)" data-id="(\d+)"(?: data-type="(\w+)")?[^>]*>(?:<h3>)?([^<]*)/g),
      ].map(([, kind, id, type, title]) => [Number(id), kind === 'row' ? 'row' : type, title]);
      expect(drawn).toEqual(dashboard.panels.map((p) => [p.id, p.type, p.title]));
      expect(page).toContain('Preview rendered from ops/grafana/nest-rate-limit.json with sample data, not Grafana');
      // A PNG's width and height are the big-endian integers at bytes 16 and 20 of its IHDR chunk.
      const image = readFileSync(png);
      expect(image.subarray(1, 4).toString('latin1')).toBe('PNG');
      expect(image.readUInt32BE(16)).toBe(1600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
