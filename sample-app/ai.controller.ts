import { Controller, Get, HttpCode, type MessageEvent, Post, Sse, UseGuards } from '@nestjs/common';
import { Observable } from 'rxjs';

import { RateLimit, type RateLimitPolicy, type RateLimitQuotaPolicy, RateLimitService } from '../lib/index.js';
import { AiProviderService, type ModelRequest, type ModelUsage } from './ai-provider.service.js';
import { ApiKeyGuard, type AuthUser, CurrentUser } from './api-key.guard.js';
import { ClientAbortSignal } from './client-abort.decorator.js';
import { AskedFor, estimate } from './completion-request.js';

/** Model tokens per calendar month (UTC), by plan: the billing-grade quota (durable with DATABASE_URL). */
export const MONTHLY_TOKENS: Readonly<Record<AuthUser['plan'], number>> = { free: 50_000, pro: 1_000_000 };

/** A completion: its text and what it used (the actual cost the caller is charged). */
export interface Completion {
  completion: string;
  usage: ModelUsage;
}

/**
 * The policies of both completion routes (they share their state, by name): at most 2 calls of a user in flight,
 * and model tokens per minute and per month, each charged the estimate up front (all-or-nothing), then
 * settled at what the model used: `used` reads it from the handler's result.
 */
const completionPolicies = <Result>(used: (result: Result) => number): RateLimitPolicy[] => [
  // A slot goes back when the response ends (also when the handler throws or the client goes away); the
  // 5-minute window only bounds the slot of a request whose process crashed.
  { name: 'ai-concurrent', algorithm: 'concurrency', limit: 2, window: '5m' },
  {
    name: 'ai-tokens',
    algorithm: 'token-bucket',
    limit: 10_000,
    window: '1m',
    burst: 20_000,
    failMode: 'closed', // model calls cost money: none while the limits cannot be read (503)
    cost: estimate,
    settle: (_ctx, result: Result) => used(result),
  },
  {
    name: 'ai-monthly',
    algorithm: 'quota',
    period: 'month',
    limit: (ctx) => MONTHLY_TOKENS[ctx.switchToHttp().getRequest<{ user: AuthUser }>().user.plan],
    failMode: 'closed',
    cost: estimate,
    settle: (_ctx, result: Result) => used(result),
  },
];

/** The monthly quota as RateLimitService reads it for /ai/usage: one policy object per plan, with its number. */
const monthly = Object.fromEntries(
  Object.entries(MONTHLY_TOKENS).map(([plan, limit]) => [
    plan,
    { name: 'ai-monthly', algorithm: 'quota', period: 'month', limit } satisfies RateLimitQuotaPolicy,
  ]),
) as Record<AuthUser['plan'], RateLimitQuotaPolicy>;

/**
 * Completions, charged in model tokens. The limiter charges each call its estimate before the handler runs
 * and settles it at the usage the model reported once the result is complete (the end of a stream); a handler
 * that throws (a bad request, the provider's budget out, the client gone) gets the whole estimate back.
 */
@Controller('ai')
@UseGuards(ApiKeyGuard)
export class AiController {
  constructor(
    private readonly rateLimits: RateLimitService,
    private readonly provider: AiProviderService,
  ) {}

  /** A whole completion. Waits for the provider's budget (up to 5 s, the tenants in turn), then calls the model. */
  @Post('complete')
  @HttpCode(200)
  @RateLimit(completionPolicies((answer: Completion) => answer.usage.totalTokens))
  async complete(
    @CurrentUser() user: AuthUser,
    @AskedFor() request: ModelRequest,
    @ClientAbortSignal() signal: AbortSignal,
  ): Promise<Completion> {
    const { text, usage } = await this.provider.complete(request, user.tenant, signal);
    return { completion: text, usage };
  }

  /**
   * A streamed completion (server-sent events): `text` events, then a `usage` event, the last, which the
   * limiter settles the charge at once the stream completes. A client that leaves stops the model.
   */
  @Sse('stream')
  @RateLimit(completionPolicies((last: MessageEvent) => (last.data as { usage: ModelUsage }).usage.totalTokens))
  stream(@CurrentUser() user: AuthUser, @AskedFor() request: ModelRequest): Observable<MessageEvent> {
    return new Observable<MessageEvent>((subscriber) => {
      const stop = new AbortController(); // aborted on unsubscribe: the client went away
      void (async () => {
        for await (const chunk of this.provider.stream(request, user.tenant, stop.signal)) {
          subscriber.next('usage' in chunk ? { type: 'usage', data: chunk } : { data: chunk });
        }
        subscriber.complete();
      })().catch((error: unknown) => subscriber.error(error));
      return () => stop.abort();
    });
  }

  /** The caller's model-token usage this month: what an invoice would read. */
  @Get('usage')
  async usage(
    @CurrentUser() user: AuthUser,
  ): Promise<{ used: number; limit: number | undefined; periodStart: Date; periodEnd: Date }> {
    return this.rateLimits.usage(monthly[user.plan], `user:${user.id}`);
  }
}
