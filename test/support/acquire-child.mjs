// One app instance that waits for units with RateLimitService.acquire() against the test's Redis, through the
// built package (dist/): a Nest application context whose store is a RedisRateLimitStore on the local clock,
// wrapped to count its consume calls and to note, for each admission, the time the store logged it.
// argv: port, keyPrefix, count, limit, windowMs, maxWaitMs. Prints "ready", waits for "go" on stdin, then
// starts `count` concurrent acquires of one unit of a sliding-window-log policy on one key and prints one JSON
// line: { resolved, allowed, rejected, calls, denials, lastCallMs, admittedAtMs }.
import 'reflect-metadata';

import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';

import { RateLimitModule, RateLimitService, RedisRateLimitStore } from '../../dist/index.js';

const [port, keyPrefix, count, limit, windowMs, maxWaitMs] = process.argv.slice(2);
const policy = {
  name: 'provider-rpm',
  algorithm: 'sliding-window-log',
  limit: Number(limit),
  window: Number(windowMs),
};

// The store reads the clock once per call, for the `now` it sends to Redis; calls of one key from this process
// never overlap (acquire() queues them), so the last reading belongs to the call that just returned.
let lastNowMs = 0;
const clock = { now: () => (lastNowMs = Date.now()) };
const client = new Redis({ host: '127.0.0.1', port: Number(port) });
const redis = new RedisRateLimitStore({ client, keyPrefix, clock });
const seen = { calls: 0, denials: 0, lastCallMs: 0, admittedAtMs: [] };
const store = {
  async consume(items) {
    seen.calls++;
    const decisions = await redis.consume(items);
    seen.lastCallMs = Math.max(seen.lastCallMs, lastNowMs);
    const [d] = decisions;
    // The log's newest entry, the admission's own time, is `resetMs - windowMs` from the call's `now` (it may be
    // later than `now` when another process's request, stamped later, was logged first).
    if (d.allowed) seen.admittedAtMs.push(lastNowMs + d.resetMs - Number(windowMs));
    else seen.denials++;
    return decisions;
  },
  peek: (items) => redis.peek(items),
  refund: (items) => redis.refund(items),
  reset: (items) => redis.reset(items),
  ping: () => redis.ping(),
};

await redis.load();
const app = await NestFactory.createApplicationContext(RateLimitModule.forRoot({ store, timeout: 2000 }), {
  logger: false,
});
const limits = app.get(RateLimitService);
process.stdout.write('ready\n');
process.stdin.once('data', async () => {
  const outcomes = await Promise.allSettled(
    Array.from({ length: Number(count) }, () => limits.acquire(policy, 'provider', { maxWaitMs: Number(maxWaitMs) })),
  );
  const resolved = outcomes.filter((o) => o.status === 'fulfilled');
  process.stdout.write(
    `${JSON.stringify({
      resolved: resolved.length,
      allowed: resolved.filter((o) => o.value.allowed).length,
      rejected: outcomes.filter((o) => o.status === 'rejected').map((o) => String(o.reason)),
      ...seen,
    })}\n`,
  );
  await app.close();
  client.disconnect();
});
