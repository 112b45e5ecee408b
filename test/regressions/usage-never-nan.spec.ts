import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule, RateLimitService, type RateLimitPolicy } from '../../lib/index.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';

// Regression: usage() answered `limit: NaN` for a quota whose limit is a function of the request (plans) when
// the store does not keep the limit of the last decision (memory, Redis).

interface Req {
  headers: Record<string, string | undefined>;
}
const PLANS: Record<string, number> = { free: 5, pro: 50 };
const planLimit = (plan = 'free'): number => {
  const limit = PLANS[plan];
  if (limit === undefined) throw new Error(`no plan ${plan}`);
  return limit;
};

const perPlan: RateLimitPolicy = {
  name: 'plan-quota',
  algorithm: 'quota',
  period: 'month',
  key: 'ip',
  limit: (ctx) => planLimit(ctx.switchToHttp().getRequest<Req>().headers['x-plan']),
};
const fixed: RateLimitPolicy = { name: 'fixed-quota', algorithm: 'quota', period: 'day', key: 'ip', limit: 7 };

@Controller()
class QuotaController {
  @Get('plan')
  @RateLimit(perPlan)
  plan() {
    return 'ok';
  }

  @Get('fixed')
  @RateLimit(fixed)
  fixed() {
    return 'ok';
  }
}

describe.each(ADAPTERS)('usage() on the memory store on %s', (adapter) => {
  let app: INestApplication;
  let service: RateLimitService;
  beforeEach(async () => {
    ({ app } = await createApp(adapter, {
      imports: [RateLimitModule.forRoot({})],
      controllers: [QuotaController],
    }));
    service = app.get(RateLimitService);
  });
  afterEach(() => app.close());

  it('reports limit undefined (never NaN) for a per-plan quota, and what was used', async () => {
    expect(await service.usage('plan-quota', 'ip:127.0.0.1')).toMatchObject({ used: 0, limit: undefined });
    for (let i = 0; i < 3; i++) expect((await request(app.getHttpServer()).get('/plan')).status).toBe(200);
    const res = await request(app.getHttpServer()).get('/plan').set('x-plan', 'pro');
    expect(res.headers['ratelimit-policy']).toBe('"plan-quota";q=50;w=2678400');

    const usage = await service.usage('plan-quota', 'ip:127.0.0.1');
    expect(usage.used).toBe(4);
    expect(usage.limit).toBeUndefined();
    expect(Object.values(usage).some((v) => Number.isNaN(v))).toBe(false);
    // An earlier period is not known on this store: nothing used, and no limit either.
    const earlier = await service.usage('plan-quota', 'ip:127.0.0.1', new Date(Date.UTC(2023, 0, 15)));
    expect(earlier).toMatchObject({ used: 0, limit: undefined });
  });

  it('still reports the limit of a quota whose limit is a number', async () => {
    await request(app.getHttpServer()).get('/fixed');
    expect(await service.usage('fixed-quota', 'ip:127.0.0.1')).toMatchObject({ used: 1, limit: 7 });
    const earlier = await service.usage('fixed-quota', 'ip:127.0.0.1', new Date(Date.UTC(2023, 0, 15)));
    expect(earlier).toMatchObject({ used: 0, limit: 7 });
  });
});
