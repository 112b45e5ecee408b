import { BadGatewayException, type INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';

import { type Clock, RATE_LIMIT_CLOCK } from '../../lib/index.js';
import {
  ModelApi,
  type ModelChunk,
  type ModelRequest,
  type ModelUsage,
  promptTokensOf,
} from '../../sample-app/ai-provider.service.js';
import { AppModule } from '../../sample-app/app.module.js';
import type { AdapterName } from '../support/nest-app.js';
import { closedAtTheEnd } from '../support/leftovers.js';

/**
 * The model provider's API for tests: answers at once with the usage the test sets (by default the prompt's
 * tokens and half of `maxTokens`, as the sample's simulated model), or, while `holding`, sends its first chunk
 * and the rest when released (rejecting with the signal's reason when the caller aborts); fails, while
 * `failing`, as a provider's 502. Records each call, and counts those in flight.
 */
export class TestModel implements ModelApi {
  holding = false;
  failing = false;
  /** What the next calls report as used, field by field; the total is their sum. */
  usage: Partial<Pick<ModelUsage, 'promptTokens' | 'completionTokens'>> = {};
  readonly calls: ModelRequest[] = [];
  inFlight = 0;
  aborted = 0;
  private held: (() => void)[] = [];

  get roundTrips(): number {
    return this.calls.length;
  }

  async *generate(request: ModelRequest, signal?: AbortSignal): AsyncGenerator<ModelChunk> {
    this.calls.push(request);
    this.inFlight++;
    try {
      if (this.failing) throw new BadGatewayException('The AI provider answered 500');
      yield { text: 'Hello' };
      if (this.holding) await this.hold(signal);
      const promptTokens = this.usage.promptTokens ?? promptTokensOf(request.prompt);
      const completionTokens = this.usage.completionTokens ?? Math.ceil(request.maxTokens / 2);
      yield { usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens } };
    } finally {
      this.inFlight--;
    }
  }

  /** Answers the held calls, and the next ones at once. */
  release(): void {
    this.holding = false;
    for (const answer of this.held.splice(0)) answer();
  }

  private async hold(signal?: AbortSignal): Promise<void> {
    try {
      await new Promise<void>((resolve, reject) => {
        this.held.push(resolve);
        if (signal?.aborted === true) reject(signal.reason);
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    } catch (error) {
      this.aborted++;
      throw error;
    }
  }
}

/** The sample app's AppModule on `adapter`, with the limiter's clock and the provider's API replaced. */
export async function startSampleApp(
  adapter: AdapterName,
  clock: Clock,
  model: ModelApi = new TestModel(),
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(RATE_LIMIT_CLOCK)
    .useValue(clock)
    .overrideProvider(ModelApi)
    .useValue(model)
    .compile();
  const app = closedAtTheEnd(
    moduleRef.createNestApplication(adapter === 'express' ? new ExpressAdapter() : new FastifyAdapter(), {
      logger: false,
    }),
  );
  await app.init();
  if (adapter === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return app;
}
