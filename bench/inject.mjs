// Requests injected into an Express app without sockets (light-my-request), with a fixed number in flight:
// the app's CPU per request from process.cpuUsage(), and redis-server's from /proc (BENCH_REDIS_PID).
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

import inject from 'light-my-request';

const CLOCK_TICKS = 100;

/** CPU ms (user + system) of a process so far, from /proc; undefined without it. */
function cpuMsOf(pid) {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/**
 * `count` GET /hello requests into `handler`, `inFlight` at a time, the i-th (from `offset`) as user
 * `u${i % users}`; resolves to how many were not answered 200.
 */
export async function injectBatch(handler, { count, offset, inFlight, users }) {
  let failed = 0;
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = offset + next++;
      const res = await inject(handler, { method: 'GET', url: '/hello', headers: { 'x-user': `u${i % users}` } });
      if (res.statusCode !== 200) failed++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return failed;
}

/**
 * `spec` is "<requests>,<inFlight>,<users>": warm-up with a quarter as many requests, then the measured ones,
 * spread over `users` x-user values (1: every request on one key). Only 200 answers count as requests; any
 * other status is reported (the limits are far above what is sent).
 */
export async function injectRequests(app, spec) {
  // light-my-request given the Express app itself keeps every request it served (about 12 KB each: 300 MB
  // over a measurement, and the GC work with it); given a function that calls the app, it keeps none
  const handler = (req, res) => app(req, res);
  const [requests, inFlight, users] = spec.split(',').map(Number);
  const redisPid = process.env.BENCH_REDIS_PID === undefined ? undefined : Number(process.env.BENCH_REDIS_PID);
  let failed = 0;
  const run = async (count, offset) => {
    failed += await injectBatch(handler, { count, offset, inFlight, users });
  };
  await run(Math.ceil(requests / 4), 0);
  failed = 0;
  // BENCH_PROFILE: a V8 CPU profile of the measured requests only (bench/profile.mjs), to that file
  const profiler = process.env.BENCH_PROFILE === undefined ? undefined : new Session();
  if (profiler !== undefined) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
    await profiler.post('Profiler.start');
  }
  const redisBefore = cpuMsOf(redisPid);
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  await run(requests, 7);
  const wallNs = Number(process.hrtime.bigint() - started);
  const cpu = process.cpuUsage(cpuBefore);
  const redisAfter = cpuMsOf(redisPid);
  if (profiler !== undefined) {
    const { profile } = await profiler.post('Profiler.stop');
    writeFileSync(process.env.BENCH_PROFILE, JSON.stringify(profile));
    profiler.disconnect();
  }
  return {
    requests,
    failed,
    appCpuUs: (cpu.user + cpu.system) / requests,
    wallUs: wallNs / 1000 / requests,
    redisCpuUs:
      redisBefore === undefined || redisAfter === undefined ? null : ((redisAfter - redisBefore) * 1000) / requests,
  };
}
