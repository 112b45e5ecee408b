// Renders a preview of the Grafana dashboard from its JSON (ops/grafana/nest-rate-limit.json) with sample data,
// and screenshots it with Debian's chromium into docs/public/operations/dashboard-preview.png, for the docs'
// operations page. Grafana itself is not run: the layout, titles, units, legends and value mappings come from
// the JSON; the curves are made up. Run: node ops/grafana/preview.mjs [--out file.png] [--html file.html]
// (the test test/docs/operations-dashboard.spec.ts renders it elsewhere and reads the HTML back).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';

import { chromium } from 'playwright-core';

const dashboard = JSON.parse(readFileSync('ops/grafana/nest-rate-limit.json', 'utf8'));
const { values: flags } = parseArgs({ options: { out: { type: 'string' }, html: { type: 'string' } } });
const OUT = flags.out ?? 'docs/public/operations/dashboard-preview.png';
const WIDTH = 1600;
const ROW_PX = 30;
const COLOURS = ['#73bf69', '#f2495c', '#5794f2', '#ff9830', '#b877d9', '#fade2a'];

/** Sample values for a legend's labels. */
const SAMPLE = {
  rate_limit_policy: ['api', 'login'],
  rate_limit_outcome: ['allowed', 'denied'],
  rate_limit_store: ['redis'],
  rate_limit_operation: ['consume', 'refund'],
  error_type: ['TimeoutError'],
};

const escape = (s) => String(s).replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

function seriesNames(target) {
  const labels = [...target.legendFormat.matchAll(/\{\{(\w+)\}\}/g)].map(([, l]) => l);
  let names = [target.legendFormat];
  for (const label of labels) {
    // A matcher of the label in the query (an outcome, a source) names the values the panel shows.
    const matched = new RegExp(`${label}=~?"([^"$]+)"`).exec(target.expr)?.[1]?.split('|');
    const values = matched ?? SAMPLE[label] ?? ['x'];
    names = names.flatMap((n) => values.map((v) => n.replace(`{{${label}}}`, v)));
  }
  return names.slice(0, 4);
}

/** A made-up but plausible curve for a unit: deterministic, so the screenshot changes only with the JSON. */
function curve(unit, index, title) {
  const scale = { reqps: 120 / (index + 1), percentunit: 0.08 + 0.1 * index, s: 0.0012 * (index + 1) }[unit] ?? 1;
  return Array.from({ length: 60 }, (_, i) => {
    if (/Breaker/.test(title) || /fail mode/.test(title)) return i > 38 && i < 46 ? scale * (unit ? 3 : 1) : 0;
    const wave = 1 + 0.35 * Math.sin(i / 6 + index) + 0.15 * Math.sin(i / 2.3 + index * 2);
    const spike = i > 38 && i < 46 ? 1.8 : 1;
    return scale * wave * spike;
  });
}

function format(value, unit) {
  if (unit === 'percentunit') return `${(value * 100).toFixed(0)}%`;
  if (unit === 's') return value < 1 ? `${(value * 1000).toFixed(1)} ms` : `${value.toFixed(2)} s`;
  if (unit === 'reqps') return `${value.toFixed(0)} req/s`;
  return value.toFixed(value < 10 ? 1 : 0);
}

function timeseries(panel, w, h) {
  const unit = panel.fieldConfig?.defaults?.unit;
  const series = panel.targets
    .flatMap((t) => seriesNames(t))
    .map((name, i) => ({ name, values: curve(unit, i, panel.title) }));
  const max = panel.fieldConfig?.defaults?.max ?? (Math.max(...series.flatMap((s) => s.values)) * 1.15 || 1);
  const left = 64;
  const plotW = w - left - 16;
  const plotH = h - 64;
  const y = (v) => 8 + plotH - (v / max) * plotH;
  const grid = [0, 0.5, 1].map(
    (f) =>
      `<line x1="${left}" x2="${left + plotW}" y1="${y(max * f)}" y2="${y(max * f)}" stroke="#2c3235"/>` +
      `<text x="${left - 6}" y="${y(max * f) + 4}" fill="#9fa7b3" font-size="11" text-anchor="end">${escape(format(max * f, unit))}</text>`,
  );
  const lines = series.map((s, i) => {
    const d = s.values.map((v, j) => `${j === 0 ? 'M' : 'L'}${left + (j / 59) * plotW} ${y(v)}`).join(' ');
    return `<path d="${d}" fill="none" stroke="${COLOURS[i % COLOURS.length]}" stroke-width="1.5"/>`;
  });
  const legend = series
    .map(
      (s, i) => `<span class="key"><i style="background:${COLOURS[i % COLOURS.length]}"></i>${escape(s.name)}</span>`,
    )
    .join('');
  return `<svg width="${w}" height="${plotH + 16}">${grid.join('')}${lines.join('')}</svg><div class="legend">${legend}</div>`;
}

function stat(panel) {
  const mappings = panel.fieldConfig?.defaults?.mappings?.[0]?.options;
  const names = panel.targets.flatMap((t) => seriesNames(t));
  return `<div class="stats">${names
    .map((name) => {
      if (mappings) {
        const m = mappings['0'];
        return `<div class="stat" style="background:${m.color === 'green' ? '#37872d' : '#c4162a'}"><small>${escape(name)}</small>${escape(m.text)}</div>`;
      }
      return `<div class="stat value"><small>${escape(name)}</small>${escape(format(0.62, panel.fieldConfig?.defaults?.unit))}</div>`;
    })
    .join('')}</div>`;
}

const colW = (WIDTH - 16) / 24;
const bottom = Math.max(...dashboard.panels.map((p) => p.gridPos.y + p.gridPos.h));
const panels = dashboard.panels.map((p) => {
  const { x, y, w, h } = p.gridPos;
  const style = `left:${8 + x * colW}px;top:${56 + y * ROW_PX}px;width:${w * colW - 8}px;height:${h * ROW_PX - 8}px`;
  if (p.type === 'row') return `<div class="row" data-id="${p.id}" style="${style}">${escape(p.title)}</div>`;
  const body = p.type === 'stat' ? stat(p) : timeseries(p, w * colW - 8, h * ROW_PX - 8);
  return `<div class="panel" data-id="${p.id}" data-type="${p.type}" style="${style}"><h3>${escape(p.title)}</h3>${body}</div>`;
});
const variables = dashboard.templating.list.map(
  (v) => `<span class="var">${escape(v.label)} <b>${v.name === 'policy' ? 'All' : 'Prometheus'}</b></span>`,
);
const html = `<!doctype html><html><head><meta charset="utf-8"><style>
body{margin:0;background:#111217;color:#ccccdc;font:13px system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;width:${WIDTH}px;position:relative;height:${64 + bottom * ROW_PX}px}
header{height:48px;display:flex;align-items:center;gap:16px;padding:0 12px;border-bottom:1px solid #2c3235}
header h1{font-size:16px;margin:0;color:#fff} .var{background:#181b1f;border:1px solid #2c3235;padding:4px 8px;border-radius:2px}
.note{margin-left:auto;color:#ff9830}
.panel{position:absolute;background:#181b1f;border:1px solid #2c3235;border-radius:2px;overflow:hidden}
.panel h3{font-size:13px;margin:6px 8px;color:#ccccdc;font-weight:500}
.row{position:absolute;font-size:14px;font-weight:600;color:#fff;padding-top:6px}
.legend{padding:0 8px;font-size:11px;display:flex;flex-wrap:wrap;gap:10px}.key i{display:inline-block;width:12px;height:3px;margin-right:4px;vertical-align:middle}
.stats{display:flex;gap:6px;padding:6px 8px;height:calc(100% - 40px)}.stat{flex:1;display:flex;flex-direction:column;justify-content:center;align-items:center;font-size:28px;color:#fff;border-radius:2px}
.stat small{font-size:11px}.stat.value{color:#73bf69}
</style></head><body><header><h1>${escape(dashboard.title)}</h1>${variables.join('')}
<span class="note">Preview rendered from ops/grafana/nest-rate-limit.json with sample data, not Grafana</span></header>
${panels.join('\n')}</body></html>`;

// The browser tests' launch options (headless, no background connections).
const launch = JSON.parse(readFileSync(new URL('../../test/support/chromium.json', import.meta.url), 'utf8'));
const browser = await chromium.launch(launch);
try {
  const page = await browser.newPage({ viewport: { width: WIDTH, height: 800 } });
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.setContent(html);
  if (errors.length > 0) throw new Error(`the preview failed: ${errors.join('; ')}`);
  mkdirSync(dirname(OUT), { recursive: true });
  if (flags.html !== undefined) writeFileSync(flags.html, html);
  await page.screenshot({ path: OUT, fullPage: true });
  console.log(`wrote ${OUT}`);
} finally {
  await browser.close();
}
