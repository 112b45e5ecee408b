// The results file of bench/redis-probe.mjs (--markdown): both shapes of every variant, their ratios to
// rate-limiter-flexible, and issue 43's Redis rows.

/** The shapes the probe measures: the keys the measured decisions meet exist already, or do not yet. */
export const SHAPES = ['existing', 'new'];

const f = (x, d = 2) => (x === undefined || x === null || Number.isNaN(x) ? '—' : x.toFixed(d));
const kilo = (ir) => (ir === undefined ? '—' : `${(ir / 1000).toFixed(1)}k`);

/** One shape's cells: µs per decision, spread, × flexible, instructions (× flexible). */
function cells(x) {
  if (x === undefined) return '— | — | — | —';
  const ir = x.irPerDecision === undefined ? '—' : `${kilo(x.irPerDecision)} (${f(x.irRatioToFlexible)})`;
  return `${f(x.usPerDecision)} | ${f(x.spread[0])}–${f(x.spread[1])} | ${f(x.ratioToFlexible)} | ${ir}`;
}

const inside = (x, outer) =>
  x === undefined
    ? '—'
    : Object.entries(x.commands)
        .filter(([c]) => !outer.has(c))
        .map(([c, v]) => `${c} ${f(v.usecPerDecision)}`)
        .join(', ');

/** Issue 43's rows: one policy of each algorithm × flexible, and three policies of one request × one policy. */
function targetRows(results) {
  const rows = [];
  const ratio = (a, b, key) => (a?.[key] && b?.[key] ? a[key] / b[key] : undefined);
  for (const algorithm of ['fixed-window', 'gcra', 'token-bucket', 'sliding-window-counter']) {
    const r = results[algorithm];
    if (r === undefined) continue;
    const both = ['existing', 'new'].map(
      (shape) =>
        `${f(r[shape]?.ratioToFlexible)} | ${r[shape]?.irRatioToFlexible === undefined ? '—' : f(r[shape].irRatioToFlexible)}`,
    );
    rows.push(`| ${algorithm}, 1 policy × rate-limiter-flexible | ${both.join(' | ')} |`);
  }
  // a request of three policies is one call of three decisions: its time per request over one policy's
  for (const [three, one] of [
    ['3 policies (fixed window ×3)', 'fixed-window'],
    ['3 policies (swc + token bucket + gcra)', 'sliding-window-counter'],
  ]) {
    if (results[three] === undefined || results[one] === undefined) continue;
    const both = ['existing', 'new'].map((shape) => {
      const [a, b] = [results[three][shape], results[one][shape]];
      const time = ratio(a, b, 'usPerDecision');
      const ir = ratio(a, b, 'irPerDecision');
      return `${f(time === undefined ? undefined : 3 * time)} | ${f(ir === undefined ? undefined : 3 * ir)}`;
    });
    rows.push(`| ${three} per request × \`${one}\` | ${both.join(' | ')} |`);
  }
  return rows;
}

/** The results file's text from the probe's output `out`; `outer` names the commands a client sends. */
export function markdown(out, outer) {
  const { results } = out;
  const rows = Object.entries(results).map(([name, r]) => {
    const mem = r.memory?.[0];
    return `| ${name} | ${cells(r.existing)} | ${cells(r.new)} | ${mem ? `${mem.bytes} (${mem.integerCounter})` : '—'} |`;
  });
  const insideRows = Object.entries(results).map(
    ([name, r]) => `| ${name} | ${inside(r.existing, outer)} | ${inside(r.new, outer)} |`,
  );
  // The load after a run includes the run's own (redis-server and the app's process on 2 cores): only the load
  // before it says whether other work shared the machine.
  const loaded = out.loadBefore?.[0] >= 0.5;
  return `# Redis command CPU per decision

Produced by \`npm run bench:redis-probe -- --markdown\`${out.callgrind ? ' with `BENCH_CALLGRIND=1`' : ''} on ${new Date().toISOString()}, ${out.cpus} cores
(${out.cpuModel}), load average ${out.loadBefore?.join(' / ')} before and ${out.loadAfter?.join(' / ')} after (1 / 5 / 15
minutes; after includes the run's own load)${loaded ? ': **a loaded machine**, the µs columns are not to be compared with a quiet run (the instruction counts are)' : ''}; redis-server of its own${out.callgrind ? ' under valgrind (callgrind), which slows it many times: read the instructions, not the µs' : ''}.
${out.requests} requests per measurement, ${out.inFlight} in flight, ${out.rounds} interleaved rounds; medians and spreads
(min–max over the rounds). Two shapes: **existing keys** (the measured requests go again to the ${out.users} users of a
first pass, whose keys exist, as in a running app) and **new keys** (they go to ${out.requests} users never seen: each
decision creates its key). The \`(${out.hotUsers} users)\` variants (each user's requests within a GCRA's emission
interval) have the existing shape only. Redis's own time in the commands (\`INFO commandstats\`, no network I/O) per
decision: the outer command (FCALL, EVALSHA) with what ran inside it. With \`BENCH_CALLGRIND=1\`, the instructions
redis-server ran per decision (reading, parsing, commands, replies), which do not depend on the machine's load
(they still move by a few per cent between runs: how many requests share one call or one read depends on timing). This
module batches the requests of a turn of the event loop into one call; the peers and the floor scripts use ioredis
auto-pipelining (one script call per decision). Memory: \`MEMORY USAGE\` of a key after the run, and in brackets an
integer counter with a TTL under a name of the same length.

| variant | existing: µs per decision | spread | × flexible | instructions (× flexible) | new: µs per decision | spread | × flexible | instructions (× flexible) | bytes per key |
|---|---:|---|---:|---:|---:|---|---:|---:|---:|
${rows.join('\n')}

## Issue 43's Redis ratios

Time is commandstats µs, instructions are callgrind's (— without \`BENCH_CALLGRIND=1\`). Three policies of one
request are compared per request: three times their time per decision over one policy's.

| ratio | existing: time | existing: instructions | new: time | new: instructions |
|---|---:|---:|---:|---:|
${targetRows(results).join('\n')}

## Inside the outer command (µs per decision)

| variant | existing keys | new keys |
|---|---|---|
${insideRows.join('\n')}

Regenerate on a quiet machine: \`npm run bench:redis-probe -- --markdown\`; the load-independent instruction counts:
\`BENCH_CALLGRIND=1 BENCH_REQUESTS=2000 BENCH_ROUNDS=1 npm run bench:redis-probe -- --markdown\` (valgrind needed).
`;
}
