// The consumer app: the same two files compiled by each consumer under test/consumers (Nest 10, 11 and 12;
// CommonJS and ES modules), against the packed nest-rate-limit, with no optional peer installed.
import { Controller, Get, Module, Param } from '@nestjs/common';
import { RateLimit, RateLimitModule, type RateLimitPolicy, RateLimitService, SkipRateLimit } from 'nest-rate-limit';
import { RateLimitGraphQLError } from 'nest-rate-limit/graphql';
import { RateLimitDroppedEvent, type RpcRateLimitedError } from 'nest-rate-limit/microservices';
import type { WsRateLimitedError } from 'nest-rate-limit/websockets';

/** Rows a tenant may export per hour, charged through RateLimitService. */
const EXPORTED_ROWS: RateLimitPolicy = { name: 'exported-rows', algorithm: 'token-bucket', limit: 1000, window: '1h' };

@Controller()
export class HelloController {
  constructor(private readonly rateLimits: RateLimitService) {}

  @Get('hello')
  @RateLimit({ name: 'hello', algorithm: 'gcra', limit: 2, window: '1m', key: 'ip' })
  hello(): { hello: string } {
    return { hello: 'world' };
  }

  /** RateLimitService, with a policy object (costs: the rows asked for). */
  @Get('exports/:rows')
  @SkipRateLimit()
  async exportRows(@Param('rows') rows: string): Promise<{ allowed: boolean; remaining: number }> {
    const decision = await this.rateLimits.consume(EXPORTED_ROWS, 'tenant:1', { cost: Number(rows) });
    return { allowed: decision.allowed, remaining: decision.remaining };
  }

  /** The context subpaths, loaded (and their types read) where none of the optional peers is installed. */
  @Get('subpaths')
  @SkipRateLimit()
  subpaths(): { errors: string[]; denial: WsRateLimitedError | RpcRateLimitedError } {
    const errors = [
      new RateLimitGraphQLError('denied', { code: 'RATE_LIMIT_DENY_LIST' }),
      new RateLimitDroppedEvent('events'),
    ];
    return {
      errors: errors.map((error) => error.name),
      denial: { status: 'error', code: 'RATE_LIMITED', message: 'denied', policy: 'hello', retryAfter: 1 },
    };
  }

  /** How many copies of the module this process holds: require() and import() must give the same classes. */
  @Get('copies')
  @SkipRateLimit()
  async copies(): Promise<{ copies: number }> {
    const imported = (await import('nest-rate-limit')) as { RateLimitModule: unknown };
    return { copies: imported.RateLimitModule === RateLimitModule ? 1 : 2 };
  }
}

@Module({
  imports: [
    RateLimitModule.forRootAsync({
      useFactory: () => ({ headers: 'ietf' as const, errors: 'problem' as const }),
    }),
  ],
  controllers: [HelloController],
})
export class AppModule {}
