import { Controller, type ExecutionContext, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule, RateLimitPolicyError } from '../../lib/index.js';
import { CapturingLogger } from '../support/log-lines.js';
import { createApp } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

// Regression: a cost function that threw was logged as `Rate limiter store failure for policy ai-tokens:
// TypeError: Cannot read properties of undefined (reading 'length')` — no Class.method, no word of the cost
// function: the reader went to look at Redis. A key, cost, limit or settle function that throws is now logged,
// and given to onError, as that function's error; the fail mode that applies is unchanged.

const query = (ctx: ExecutionContext) =>
  ctx.switchToHttp().getRequest<{ query: Record<string, string | undefined> }>().query;

@Controller()
class AiController {
  @Get('key')
  @RateLimit({
    name: 'by-tenant',
    algorithm: 'fixed-window',
    limit: 10,
    window: '1m',
    // No user on this route: `user` is undefined.
    key: (ctx) => ctx.switchToHttp().getRequest<{ user: { tenant: string } }>().user.tenant,
  })
  byTenant() {
    return 'ok';
  }

  @Get('key-closed')
  @RateLimit({
    name: 'login',
    algorithm: 'fixed-window',
    limit: 10,
    window: '1m',
    failMode: 'closed',
    key: () => {
      throw new Error('no session store');
    },
  })
  login() {
    return 'ok';
  }

  @Get('cost')
  @RateLimit({
    name: 'ai-tokens',
    algorithm: 'token-bucket',
    limit: 1000,
    window: '1m',
    key: 'ip',
    cost: (ctx) => (query(ctx).prompt as unknown as unknown[]).length,
  })
  complete() {
    return 'ok';
  }

  @Get('limit')
  @RateLimit({
    name: 'plan',
    algorithm: 'sliding-window-counter',
    limit: async () => Promise.reject(new RangeError('no plan for this tenant')),
    window: '1m',
    key: 'ip',
  })
  planned() {
    return 'ok';
  }

  @Get('settle')
  @RateLimit({
    name: 'ai-settle',
    algorithm: 'token-bucket',
    limit: 1000,
    window: '1m',
    key: 'ip',
    cost: 100,
    settle: (_ctx, result: { usage: { totalTokens: number } }) => result.usage.totalTokens,
  })
  settled() {
    return {};
  }
}

describe('regression: a policy function that throws is logged as a store failure', () => {
  let app: INestApplication;
  const logger = new CapturingLogger();
  const errors: { error: Error; policy: string }[] = [];

  beforeAll(async () => {
    ({ app } = await createApp(
      'express',
      {
        imports: [RateLimitModule.forRoot({ onError: (error, policy) => errors.push({ error, policy }) })],
        controllers: [AiController],
      },
      undefined,
      { logger },
    ));
  });
  afterAll(() => app.close());

  /** The lines logged that name `policy`. */
  const linesOf = (policy: string) => logger.lines.filter((line) => line.includes(`policy "${policy}"`));

  it.each([
    [
      'key',
      '/key',
      'by-tenant',
      200,
      `key function of policy "by-tenant" on AiController.byTenant threw: TypeError: Cannot read properties of ` +
        `undefined (reading 'tenant'); fail open: the request is decided without this policy`,
    ],
    [
      'key (fail closed)',
      '/key-closed',
      'login',
      503,
      'key function of policy "login" on AiController.login threw: no session store; fail closed (login): the ' +
        'request is refused with 503',
    ],
    [
      'cost',
      '/cost',
      'ai-tokens',
      200,
      `cost function of policy "ai-tokens" on AiController.complete threw: TypeError: Cannot read properties of ` +
        `undefined (reading 'length'); fail open: the request is decided without this policy`,
    ],
    [
      'limit (a rejected Promise)',
      '/limit',
      'plan',
      200,
      'limit function of policy "plan" on AiController.planned threw: RangeError: no plan for this tenant; fail ' +
        'open: the request is decided without this policy',
    ],
  ])('a %s function: the log line names it, the policy and Class.method', async (_what, path, policy, status, line) => {
    expect((await request(app.getHttpServer()).get(path)).status).toBe(status);
    expect(linesOf(policy)).toEqual([`error ${line}`]);
    expect(logger.lines.join('\n')).not.toContain('store failure');
    expectOnError(policy, line.slice(0, line.indexOf('; ')));
  });

  it('a settle function: the log line names it, and the estimate is kept', async () => {
    expect((await request(app.getHttpServer()).get('/settle')).status).toBe(200);
    await waitFor(() => linesOf('ai-settle').length > 0, 'the settlement to be reported');
    const line =
      `settle function of policy "ai-settle" on AiController.settled threw: TypeError: Cannot read properties of ` +
      `undefined (reading 'totalTokens')`;
    expect(linesOf('ai-settle')).toEqual([`error ${line}; the estimate is kept`]);
    expect(logger.lines.join('\n')).not.toContain('store failure');
    expectOnError('ai-settle', line);
  });

  /** onError got the function's error: a RateLimitPolicyError naming the function, what it threw as its cause. */
  function expectOnError(policy: string, message: string): void {
    const got = errors.filter((e) => e.policy === policy).map(({ error }) => error);
    expect(got).toEqual([expect.any(RateLimitPolicyError)]);
    expect(got.map((error) => [error.message, error.cause instanceof Error])).toEqual([[message, true]]);
  }
});
