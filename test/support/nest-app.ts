import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';

import { RATE_LIMIT_CLOCK } from '../../lib/index.js';
import { FakeClock } from './fake-clock.js';

export type AdapterName = 'express' | 'fastify';
export const ADAPTERS: AdapterName[] = ['express', 'fastify'];

/** A Nest app on the given HTTP adapter, with the rate limiter's clock replaced by a FakeClock. */
export async function createApp(
  adapter: AdapterName,
  metadata: ModuleMetadata,
  clock = new FakeClock(),
): Promise<{ app: INestApplication; clock: FakeClock; server: () => unknown }> {
  const moduleRef = await Test.createTestingModule(metadata)
    .overrideProvider(RATE_LIMIT_CLOCK)
    .useValue(clock)
    .compile();
  const app = moduleRef.createNestApplication(adapter === 'express' ? new ExpressAdapter() : new FastifyAdapter(), {
    logger: false,
  });
  await app.init();
  if (adapter === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return { app, clock, server: () => app.getHttpServer() };
}
