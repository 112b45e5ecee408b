import type { INestApplication, LoggerService, ModuleMetadata } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { RATE_LIMIT_CLOCK } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { closedAtTheEnd } from './leftovers.js';
import { TEST_START_MS } from './time.js';

export type AdapterName = 'express' | 'fastify';
export const ADAPTERS: AdapterName[] = ['express', 'fastify'];

/**
 * A Nest app on the given HTTP adapter, with the rate limiter's clock replaced by a FakeClock; silent, or
 * logging to `logger` (a CapturingLogger) from its compilation on. One the test leaves open, because it failed
 * first, is closed after the file's last test.
 */
export async function createApp(
  adapter: AdapterName,
  metadata: ModuleMetadata,
  clock = new FakeClock(TEST_START_MS),
  { logger }: { logger?: LoggerService } = {},
): Promise<{ app: INestApplication; clock: FakeClock; server: () => unknown }> {
  const builder = Test.createTestingModule(metadata).overrideProvider(RATE_LIMIT_CLOCK).useValue(clock);
  const moduleRef = await (logger === undefined ? builder : builder.setLogger(logger)).compile();
  const app = closedAtTheEnd(
    moduleRef.createNestApplication(adapter === 'express' ? new ExpressAdapter() : new FastifyAdapter(), {
      logger: logger ?? false,
    }),
  );
  await app.init();
  if (adapter === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return { app, clock, server: () => app.getHttpServer() };
}

/**
 * The statuses of `count` GET requests to `path` on `app`, sent one after the other.
 * @example expect(await statusesOf(app, '/closed', 3)).toEqual([200, 200, 429]);
 */
export async function statusesOf(app: INestApplication, path: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await request(app.getHttpServer()).get(path)).status);
  return statuses;
}
