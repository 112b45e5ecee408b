import { BadRequestException, Body, Controller, Get, HttpCode, Logger, Post, UseGuards } from '@nestjs/common';

import {
  RateLimit,
  type RateLimitDecision,
  RateLimitExceededException,
  RateLimitPolicyError,
  type RateLimitQuotaPolicy,
  RateLimitService,
  RateLimitUnavailableException,
} from '../lib/index.js';
import { ApiKeyGuard, type AuthUser, CurrentUser } from './api-key.guard.js';

/** Longest prompt accepted, in characters (about MAX_PROMPT_CHARS / 4 tokens). */
export const MAX_PROMPT_CHARS = 16_000;
/** Largest `maxTokens` accepted. With MAX_PROMPT_CHARS, every valid estimate fits the bucket's burst. */
export const MAX_TOKENS = 16_000;

interface CompleteBody {
  prompt?: unknown;
  maxTokens?: unknown;
}

export interface Completion {
  completion: string;
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
  /** Tokens left in the caller's `ai-tokens` bucket after this call was settled. */
  tokensRemaining: number;
  /** Tokens left in the caller's plan for this month after this call was settled. */
  monthlyRemaining: number;
}

/** Model tokens per calendar month (UTC), by plan: the billing-grade quota (durable with DATABASE_URL). */
export const MONTHLY_TOKENS: Readonly<Record<AuthUser['plan'], number>> = { free: 50_000, pro: 1_000_000 };

/** The monthly quota as the service charges it: one policy object per plan, with that plan's number. */
const monthly = Object.fromEntries(
  Object.entries(MONTHLY_TOKENS).map(([plan, limit]) => [
    plan,
    { name: 'ai-monthly', algorithm: 'quota', period: 'month', limit } satisfies RateLimitQuotaPolicy,
  ]),
) as Record<AuthUser['plan'], RateLimitQuotaPolicy>;

/** A rough token count: about 4 characters per token. */
const tokensIn = (text: string): number => Math.ceil(text.length / 4);

@Controller('ai')
@UseGuards(ApiKeyGuard)
export class AiController {
  private readonly logger = new Logger(AiController.name);

  constructor(private readonly rateLimits: RateLimitService) {}

  /**
   * Charges model tokens, not requests: the guard cannot know the cost before the model has answered, so the
   * handler charges an estimate through RateLimitService — to the per-minute bucket and to the plan's monthly
   * quota at once, all-or-nothing — and refunds what the model did not use.
   * Both are declared here with `cost: 0` only to register them and show them in the RateLimit header, as they
   * stood before this call: the limiter charges them nothing, the handler settles them.
   */
  @Post('complete')
  @HttpCode(200)
  @RateLimit([
    { name: 'ai-tokens', algorithm: 'token-bucket', limit: 10_000, window: '1m', burst: 20_000, cost: 0 },
    {
      name: 'ai-monthly',
      algorithm: 'quota',
      period: 'month',
      limit: (ctx) => MONTHLY_TOKENS[ctx.switchToHttp().getRequest<{ user: AuthUser }>().user.plan],
      cost: 0,
    },
  ])
  async complete(@CurrentUser() user: AuthUser, @Body() body: CompleteBody = {}): Promise<Completion> {
    const { prompt, maxTokens } = body;
    if (typeof prompt !== 'string' || prompt === '' || prompt.length > MAX_PROMPT_CHARS) {
      throw new BadRequestException(`prompt must be a string of 1 to ${MAX_PROMPT_CHARS} characters`);
    }
    if (typeof maxTokens !== 'number' || !Number.isSafeInteger(maxTokens) || maxTokens < 1 || maxTokens > MAX_TOKENS) {
      throw new BadRequestException(`maxTokens must be an integer from 1 to ${MAX_TOKENS}`);
    }
    const key = `user:${user.id}`; // the identity the limiter gives `key: 'user'`, so header and charge agree
    const promptTokens = tokensIn(prompt);
    const estimate = promptTokens + maxTokens;

    let charged: RateLimitDecision;
    let month: RateLimitDecision;
    try {
      [charged, month] = await this.rateLimits.consumeMany([
        { policy: 'ai-tokens', key, cost: estimate },
        { policy: monthly[user.plan], key, cost: estimate },
      ]);
    } catch (error) {
      // Store failures and timeouts are thrown, not decided. Model calls cost money: fail closed with 503.
      if (error instanceof RateLimitPolicyError) throw error; // a programming error: let it be a 500
      throw new RateLimitUnavailableException('ai-tokens', 1);
    }
    // The module's exception filter answers 429 with Retry-After, as for the guard's own denials.
    if (!charged.allowed) throw new RateLimitExceededException(charged);
    if (!month.allowed) throw new RateLimitExceededException(month);

    // The fake model stops halfway through its budget: it uses fewer tokens than were charged.
    const completionTokens = Math.ceil(maxTokens / 2);
    const used = promptTokens + completionTokens;
    let tokensRemaining = charged.remaining;
    let monthlyRemaining = month.remaining;
    try {
      tokensRemaining = (await this.rateLimits.refund('ai-tokens', key, estimate - used)).remaining;
      monthlyRemaining = (await this.rateLimits.refund(monthly[user.plan], key, estimate - used)).remaining;
    } catch (error) {
      // The answer is computed and paid for: a failed refund only costs the caller the unused estimate.
      this.logger.warn(`could not refund ${estimate - used} ai-tokens to ${key}: ${(error as Error).message}`);
    }
    return {
      completion: `(fake completion: ${completionTokens} tokens for a ${promptTokens}-token prompt)`,
      usage: { promptTokens, completionTokens, totalTokens: used },
      tokensRemaining,
      monthlyRemaining,
    };
  }

  /** The caller's model-token usage this month: what an invoice would read. */
  @Get('usage')
  async usage(
    @CurrentUser() user: AuthUser,
  ): Promise<{ used: number; limit: number | undefined; periodStart: Date; periodEnd: Date }> {
    return this.rateLimits.usage(monthly[user.plan], `user:${user.id}`);
  }
}
