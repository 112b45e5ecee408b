import type { Server } from 'node:net';

import { Controller, Get, type INestApplication, Post } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import request from 'supertest';

import {
  Criticality,
  RateLimit,
  type RateLimitDecisionEvent,
  RateLimitModule,
  type RateLimitModuleOptions,
  RateLimitService,
} from '../../lib/index.js';
import { STORE_DURATION_BUCKETS } from '../../lib/metrics/otel-metrics.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { FailModeController } from '../support/fail-mode.controller.js';
import { ADAPTERS, createApp, statusesOf } from '../support/nest-app.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { postOn } from '../support/http-post.js';

/** Handlers of /lease wait here until the test lets them go. */
const waiting: (() => void)[] = [];
const release = (): void => {
  for (const go of waiting.splice(0)) go();
};

@Controller()
class MeteredController {
  @Get('limited')
  @RateLimit({ name: 'limited', algorithm: 'fixed-window', limit: 2, window: '1m', key: 'ip' })
  limited() {
    return 'ok';
  }

  @Get('shadow')
  @RateLimit({ name: 'trial', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'ip', mode: 'shadow' })
  shadow() {
    return 'ok';
  }

  @Post('lease')
  @RateLimit({ name: 'leased', algorithm: 'concurrency', limit: 5, window: '5m', key: 'ip' })
  async lease() {
    await new Promise<void>((resolve) => waiting.push(resolve));
    return 'done';
  }
}

@Controller()
class ShedController {
  @Post('hold')
  @Criticality('critical')
  async hold() {
    await new Promise<void>((resolve) => waiting.push(resolve));
    return 'done';
  }

  @Get('extra')
  @Criticality('sheddable')
  extra() {
    return 'ok';
  }
}

/** The SDK with an in-memory exporter, registered as the global MeterProvider (before the app is made). */
interface Sdk {
  provider: MeterProvider;
  collect: () => Promise<Collected>;
}
type Attrs = Record<string, string | boolean>;
interface Point {
  attributes: Record<string, unknown>;
  value: number;
  /** A histogram's bucket boundaries. */
  boundaries?: number[] | undefined;
}
type Collected = (name: string) => Point[];

function registerSdk(): Sdk {
  metrics.disable();
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  expect(metrics.setGlobalMeterProvider(provider)).toBe(true);
  return {
    provider,
    collect: async () => {
      await reader.forceFlush();
      const last = exporter.getMetrics().at(-1);
      exporter.reset();
      const all = (last?.scopeMetrics ?? []).flatMap((s) => s.metrics);
      return (name) =>
        all
          .filter((m) => m.descriptor.name === name)
          .flatMap((m) =>
            m.dataPoints.map((p) => ({
              attributes: p.attributes,
              // A histogram's point counts its recordings.
              value:
                m.dataPointType === DataPointType.HISTOGRAM
                  ? (p.value as { count: number }).count
                  : (p.value as number),
              boundaries:
                m.dataPointType === DataPointType.HISTOGRAM
                  ? (p.value as { buckets: { boundaries: number[] } }).buckets.boundaries
                  : undefined,
            })),
          );
    },
  };
}

/** The sum of the points of `name` whose attributes include `attrs`. */
const total = (points: Point[], attrs: Attrs): number =>
  points
    .filter((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v))
    .reduce((sum, p) => sum + p.value, 0);

afterAll(() => metrics.disable());

describe.each(ADAPTERS)('OpenTelemetry metrics on the memory store (%s)', (adapter) => {
  let sdk: Sdk;
  let app: INestApplication;
  beforeEach(async () => {
    sdk = registerSdk();
    ({ app } = await createApp(adapter, {
      imports: [RateLimitModule.forRoot({})],
      controllers: [MeteredController],
    }));
    await app.listen(0, '127.0.0.1');
  });
  afterEach(async () => {
    release();
    await app.close();
    await sdk.provider.shutdown();
  });

  it('counts decisions by policy and outcome, and times each store call', async () => {
    const server = app.getHttpServer() as Server;
    const limited = [];
    for (let i = 0; i < 3; i++) limited.push((await request(server).get('/limited')).status);
    expect(limited).toEqual([200, 200, 429]);
    for (let i = 0; i < 2; i++) expect((await request(server).get('/shadow')).status).toBe(200);

    const got = await sdk.collect();
    const decisions = got('rate_limit.decisions');
    expect(total(decisions, { 'rate_limit.policy': 'limited', 'rate_limit.outcome': 'allowed' })).toBe(2);
    expect(total(decisions, { 'rate_limit.policy': 'limited', 'rate_limit.outcome': 'denied' })).toBe(1);
    expect(total(decisions, { 'rate_limit.policy': 'trial', 'rate_limit.outcome': 'allowed' })).toBe(1);
    expect(total(decisions, { 'rate_limit.policy': 'trial', 'rate_limit.outcome': 'shadow-denied' })).toBe(1);
    expect(total(decisions, {})).toBe(5);
    expect(total(decisions, { 'rate_limit.source': 'store' })).toBe(5);
    const durations = got('rate_limit.store.duration');
    expect(total(durations, { 'rate_limit.store': 'memory', 'rate_limit.operation': 'consume' })).toBe(5);
    // In seconds: the SDK's default buckets (0 to 10,000, for ms) would put every call into the first ones.
    expect(durations.map((p) => p.boundaries)).toEqual(durations.map(() => STORE_DURATION_BUCKETS));
    expect(durations.every((p) => p.attributes['error.type'] === undefined)).toBe(true);
  });

  it("carries an override's part in each decision: applied, or a dry run's answer", async () => {
    const server = app.getHttpServer() as Server;
    const service = app.get(RateLimitService);
    await service.override('limited', 'ip:127.0.0.1', { limit: 3 });
    const applied = [];
    for (let i = 0; i < 4; i++) applied.push((await request(server).get('/limited')).status);
    expect(applied).toEqual([200, 200, 200, 429]);
    // A dry run of 5: the declared 2 denies, the override would have admitted.
    await service.override('limited', 'ip:127.0.0.1', { limit: 5, shadow: true });
    expect((await request(server).get('/limited')).status).toBe(429);

    const decisions = (await sdk.collect())('rate_limit.decisions');
    const limited = { 'rate_limit.policy': 'limited' };
    expect(
      total(decisions, { ...limited, 'rate_limit.override': 'applied', 'rate_limit.override.allowed': true }),
    ).toBe(3);
    expect(
      total(decisions, { ...limited, 'rate_limit.override': 'applied', 'rate_limit.override.allowed': false }),
    ).toBe(1);
    expect(
      total(decisions, {
        ...limited,
        'rate_limit.outcome': 'denied',
        'rate_limit.override': 'shadow',
        'rate_limit.override.allowed': true,
      }),
    ).toBe(1);
    expect(total(decisions, limited)).toBe(5);
  });

  it('counts the leases of a concurrency policy while their requests run, and back to 0 when they end', async () => {
    const server = app.getHttpServer() as Server;
    const statuses = [
      postOn(server, '/lease').status,
      postOn(server, '/lease').status,
      postOn(server, '/lease').status,
    ];
    await waitFor(() => waiting.length === 3);
    const leases = (await sdk.collect())('rate_limit.concurrency.slots');
    expect(total(leases, { 'rate_limit.policy': 'leased' })).toBe(3);

    release();
    expect(await Promise.all(statuses)).toEqual([201, 201, 201]);
    await app.get(RateLimiter).refundsSettled();
    const after = await sdk.collect();
    expect(total(after('rate_limit.concurrency.slots'), { 'rate_limit.policy': 'leased' })).toBe(0);
    expect(
      total(after('rate_limit.store.duration'), { 'rate_limit.store': 'memory', 'rate_limit.operation': 'refund' }),
    ).toBeGreaterThanOrEqual(1);
  });
});

describe('OpenTelemetry metrics on Redis (express)', () => {
  let sdk: Sdk;
  let redis: TestRedis;
  let app: INestApplication;
  let events: RateLimitDecisionEvent[];
  beforeEach(async () => {
    sdk = registerSdk();
    redis = await startRedis();
    events = [];
    const options: RateLimitModuleOptions = {
      redis: { url: redis.url },
      timeout: 100,
      onError: () => undefined,
      onDecision: (event) => events.push(event),
    };
    ({ app } = await createApp('express', {
      imports: [RateLimitModule.forRoot(options)],
      controllers: [MeteredController, FailModeController],
    }));
  });
  afterEach(async () => {
    await app.close();
    await redis.stop();
    await sdk.provider.shutdown();
  });

  it('tells denials of the local cache from the store, and counts fail-open, fail-closed and the open breaker', async () => {
    const server = app.getHttpServer();
    const limited = [];
    for (let i = 0; i < 4; i++) limited.push((await request(server).get('/limited')).status);
    expect(limited).toEqual([200, 200, 429, 429]);
    let got = await sdk.collect();
    let decisions = got('rate_limit.decisions');
    expect(total(decisions, { 'rate_limit.policy': 'limited', 'rate_limit.outcome': 'allowed' })).toBe(2);
    expect(total(decisions, { 'rate_limit.policy': 'limited', 'rate_limit.outcome': 'denied' })).toBe(1);
    expect(total(decisions, { 'rate_limit.policy': 'limited', 'rate_limit.outcome': 'deny-cache' })).toBe(1);
    expect(total(decisions, { 'rate_limit.policy': 'limited', 'rate_limit.source': 'store' })).toBe(3);
    expect(total(decisions, { 'rate_limit.policy': 'limited', 'rate_limit.source': 'deny-cache' })).toBe(1);
    expect(events.map((e) => [e.allowed, e.source])).toEqual([
      [true, 'store'],
      [true, 'store'],
      [false, 'store'],
      [false, 'deny-cache'],
    ]);
    // The fourth request was answered from the cache: three store calls.
    expect(
      total(got('rate_limit.store.duration'), { 'rate_limit.store': 'redis', 'rate_limit.operation': 'consume' }),
    ).toBe(3);
    expect(got('rate_limit.breaker.state')).toEqual([{ attributes: { 'rate_limit.store': 'redis' }, value: 0 }]);

    redis.process.kill('SIGKILL');
    await new Promise((resolve) => redis.process.once('exit', resolve));
    for (let i = 0; i < 6; i++) {
      expect((await request(server).get('/open')).status).toBe(200);
      expect((await request(server).get('/closed')).status).toBe(503);
    }
    got = await sdk.collect();
    decisions = got('rate_limit.decisions');
    expect(total(decisions, { 'rate_limit.policy': 'open', 'rate_limit.outcome': 'failed-open' })).toBe(6);
    expect(total(decisions, { 'rate_limit.policy': 'closed', 'rate_limit.outcome': 'failed-closed' })).toBe(6);
    expect(total(decisions, { 'rate_limit.policy': 'open', 'rate_limit.source': 'fail-open' })).toBe(6);
    expect(total(decisions, { 'rate_limit.policy': 'closed', 'rate_limit.source': 'fail-closed' })).toBe(6);
    const failedCalls = got('rate_limit.store.duration').filter((p) => p.attributes['error.type'] !== undefined);
    expect(failedCalls.reduce((sum, p) => sum + p.value, 0)).toBe(12);
    expect(failedCalls.map((p) => p.attributes['error.type'])).toContain('RateLimitCircuitOpenError');
    // 12 failures in a row: past the threshold of 5, the breaker is open.
    expect(got('rate_limit.breaker.state')).toEqual([{ attributes: { 'rate_limit.store': 'redis' }, value: 1 }]);

    // Restarted, the store answers the breaker's probe: closed again (and the app closes its connection cleanly).
    const port = redis.port;
    await redis.stop();
    redis = await startRedis({ port });
    await waitFor(async () => (await request(server).get('/closed')).status === 200, 'the limiter to answer again');
    expect((await sdk.collect())('rate_limit.breaker.state')).toEqual([
      { attributes: { 'rate_limit.store': 'redis' }, value: 0 },
    ]);
  });
});

describe('OpenTelemetry metrics of load shedding', () => {
  it('show the limit and the requests in flight as gauges, and count the requests shed by criticality', async () => {
    const sdk = registerSdk();
    const { app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({ shedding: { minLimit: 1, maxLimit: 1, maxEventLoopDelay: 0 } })],
      controllers: [ShedController],
    });
    try {
      await app.listen(0, '127.0.0.1');
      const server = app.getHttpServer() as Server;
      const held = postOn(server, '/hold').status;
      await waitFor(() => waiting.length === 1);
      expect((await request(server).get('/extra')).status).toBe(503);
      const during = await sdk.collect();
      expect(during('rate_limit.shedding.limit')).toEqual([{ attributes: {}, value: 1, boundaries: undefined }]);
      expect(during('rate_limit.shedding.in_flight')).toEqual([{ attributes: {}, value: 1, boundaries: undefined }]);
      expect(during('rate_limit.shed')).toEqual([
        { attributes: { 'rate_limit.criticality': 'sheddable' }, value: 1, boundaries: undefined },
      ]);
      release();
      expect(await held).toBe(201);
      await waitFor(() => app.get(RateLimiter).shedding?.shedder.inFlight === 0);
      expect((await sdk.collect())('rate_limit.shedding.in_flight')).toEqual([
        { attributes: {}, value: 0, boundaries: undefined },
      ]);
    } finally {
      release();
      await app.close();
      await sdk.provider.shutdown();
    }
  });
});

describe('without a MeterProvider', () => {
  it('decides as usual and records nothing', async () => {
    metrics.disable();
    const { app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({})],
      controllers: [MeteredController],
    });
    try {
      expect(await statusesOf(app, '/limited', 3)).toEqual([200, 200, 429]);
      // The API's meter is its no-op one for good: no instruments, so no store call is timed for nothing.
      expect(app.get(RateLimiter).engine.metrics).toBeUndefined();
      // A provider registered after the start is not used: instruments are made when the module starts.
      const sdk = registerSdk();
      expect((await request(app.getHttpServer()).get('/limited')).status).toBe(429);
      expect((await sdk.collect())('rate_limit.decisions')).toEqual([]);
      await sdk.provider.shutdown();
    } finally {
      await app.close();
    }
  });
});
