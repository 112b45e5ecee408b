import { Controller, Get, type INestApplication, type LoggerService } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule, type RateLimitModuleOptions, type RateLimitPolicy } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { createApp } from './nest-app.js';
import { TEST_START_MS } from './time.js';

/** What one request was answered: its status and Retry-After (seconds), if any. */
export interface Answer {
  readonly status: number;
  readonly retryAfter: number | undefined;
}

/**
 * One version of an app, as a deploy starts it: GET /limited under `policy` (keyed by the client address), on
 * the store `options` name, on a clock of its own (offset from the others' to skew it). Several versions on one
 * store share their state when their options share the store and the key prefix.
 * @example const old = await versionOf({ name: 'api', algorithm: 'fixed-window', limit: 5, window: '1s', key: 'ip' }, options);
 */
export async function versionOf(
  policy: RateLimitPolicy,
  options: RateLimitModuleOptions,
  clock = new FakeClock(TEST_START_MS),
  logger?: LoggerService,
): Promise<{ app: INestApplication; clock: FakeClock; get(): Promise<Answer>; times(n: number): Promise<Answer[]> }> {
  @Controller()
  class VersionedController {
    @Get('limited')
    @RateLimit(policy)
    limited(): string {
      return 'ok';
    }
  }
  const { app } = await createApp(
    'express',
    { imports: [RateLimitModule.forRoot(options)], controllers: [VersionedController] },
    clock,
    { logger },
  );
  const get = async (): Promise<Answer> => {
    const res = await request(app.getHttpServer()).get('/limited');
    const header = res.headers['retry-after'];
    return { status: res.status, retryAfter: header === undefined ? undefined : Number(header) };
  };
  const times = async (n: number): Promise<Answer[]> => {
    const answers: Answer[] = [];
    for (let i = 0; i < n; i++) answers.push(await get());
    return answers;
  };
  return { app, clock, get, times };
}
