import type { INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';

import { type Clock, RATE_LIMIT_CLOCK } from '../../lib/index.js';
import { ModelNetwork } from '../../sample-app/ai-provider.service.js';
import { AppModule } from '../../sample-app/app.module.js';
import type { AdapterName } from '../support/nest-app.js';

/**
 * The model provider's network for tests: answers at once, or, while `holding`, when released (or rejects
 * with the signal's reason when the caller aborts). Counts the round trips, and those in flight.
 */
export class TestNetwork implements ModelNetwork {
  holding = false;
  roundTrips = 0;
  inFlight = 0;
  aborted = 0;
  private held: (() => void)[] = [];

  async roundTrip(signal?: AbortSignal): Promise<void> {
    this.roundTrips++;
    this.inFlight++;
    try {
      if (!this.holding) return;
      await new Promise<void>((resolve, reject) => {
        this.held.push(resolve);
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    } catch (error) {
      this.aborted++;
      throw error;
    } finally {
      this.inFlight--;
    }
  }

  /** Answers the held round trips, and the next ones at once. */
  release(): void {
    this.holding = false;
    for (const answer of this.held.splice(0)) answer();
  }
}

/** The sample app's AppModule on `adapter`, with the limiter's clock and the provider's network replaced. */
export async function startSampleApp(
  adapter: AdapterName,
  clock: Clock,
  network: ModelNetwork = new TestNetwork(),
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(RATE_LIMIT_CLOCK)
    .useValue(clock)
    .overrideProvider(ModelNetwork)
    .useValue(network)
    .compile();
  const app = moduleRef.createNestApplication(adapter === 'express' ? new ExpressAdapter() : new FastifyAdapter(), {
    logger: false,
  });
  await app.init();
  if (adapter === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return app;
}
