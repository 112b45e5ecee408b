import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';

import { RateLimitModule, type RateLimitModuleOptions } from '../lib/index.js';
import { AiProviderService, ModelApi, SIMULATED_MODEL } from './ai-provider.service.js';
import { AiController } from './ai.controller.js';
import { AuthController } from './auth.controller.js';
import { ChatGateway } from './chat.gateway.js';
import { GreetingResolver } from './greeting.resolver.js';
import { HealthController } from './health.controller.js';
import { IndexController } from './index.controller.js';
import { PlansController } from './plans.controller.js';
import { ReportsController } from './reports.controller.js';

/**
 * The module's options. Every route gets `per-user` (100 per minute, keyed by the authenticated user, or by
 * the client IP before or without authentication) unless it skips it; routes add their own policies.
 * `trustProxy: 'loopback'` believes X-Forwarded-For only from a proxy on the same host (nginx in front of the
 * app); clients connecting directly are keyed by their socket address, whatever header they send.
 * With REDIS_URL set, limits live in Redis and hold across instances; without it, in this process's memory.
 * With DATABASE_URL set, the monthly AI quota lives in PostgreSQL (durable, exact, readable for invoices;
 * the schema is created at start), and so do the rate limits unless REDIS_URL is set too.
 * `shedding` keeps the critical routes (@Criticality) flowing when the instance is overloaded.
 */
export function rateLimitOptions(env: NodeJS.ProcessEnv = process.env): RateLimitModuleOptions {
  return {
    defaults: [{ name: 'per-user', algorithm: 'sliding-window-counter', limit: 100, window: '1m' }],
    trustProxy: 'loopback',
    // Load shedding: under overload this instance refuses sheddable routes first (report exports), then default
    // ones, and keeps a fifth of its concurrency for critical ones (health, login, plan changes).
    shedding: { maxEventLoopDelay: '500ms' },
    ...(env.REDIS_URL ? { redis: { url: env.REDIS_URL } } : {}),
    ...(env.DATABASE_URL ? { postgres: { connectionString: env.DATABASE_URL, migrate: true } } : {}),
  };
}

@Module({
  imports: [
    RateLimitModule.forRootAsync({ useFactory: () => rateLimitOptions() }),
    // A code-first schema, built in memory at start (no file written); errors without stack traces, so
    // clients see a rate-limit error's extensions exactly.
    GraphQLModule.forRoot<ApolloDriverConfig>({
      driver: ApolloDriver,
      autoSchemaFile: true,
      includeStacktraceInErrorResponses: false,
    }),
  ],
  controllers: [IndexController, HealthController, AuthController, AiController, ReportsController, PlansController],
  providers: [
    GreetingResolver,
    ChatGateway,
    AiProviderService,
    // The model provider's API, simulated: a completion streamed over MODEL_LATENCY_MS. Tests replace it.
    { provide: ModelApi, useValue: SIMULATED_MODEL },
  ],
})
export class AppModule {}
