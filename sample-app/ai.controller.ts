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
import { AiProviderService, type ModelAnswer } from './ai-provider.service.js';
import { ApiKeyGuard, type AuthUser, CurrentUser } from './api-key.guard.js';
import { ClientAbortSignal } from './client-abort.decorator.js';

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

  constructor(
    private readonly rateLimits: RateLimitService,
    private readonly provider: AiProviderService,
  ) {}

  /**
   * At most 2 completions of a user in flight at once (`ai-concurrent`, decided before the handler with the
   * route's other policies, all-or-nothing): a third is refused with 429 while two run, and each slot goes back
   * when its response ends — also when the handler throws or the client goes away; the 5-minute window only
   * bounds the slot of a request whose process crashed.
   * Charges model tokens, not requests: the guard cannot know the cost before the model has answered, so the
   * handler charges an estimate through RateLimitService — to the per-minute bucket and to the plan's monthly
   * quota at once, all-or-nothing — and refunds what the model did not use, or all of it when the model was
   * not called (the provider's budget had no slot in time, the client went away).
   * Both are declared here with `cost: 0` only to register them and show them in the RateLimit header, as they
   * stood before this call: the limiter charges them nothing, the handler settles them.
   */
  @Post('complete')
  @HttpCode(200)
  @RateLimit([
    { name: 'ai-concurrent', algorithm: 'concurrency', limit: 2, window: '5m' },
    { name: 'ai-tokens', algorithm: 'token-bucket', limit: 10_000, window: '1m', burst: 20_000, cost: 0 },
    {
      name: 'ai-monthly',
      algorithm: 'quota',
      period: 'month',
      limit: (ctx) => MONTHLY_TOKENS[ctx.switchToHttp().getRequest<{ user: AuthUser }>().user.plan],
      cost: 0,
    },
  ])
  async complete(
    @CurrentUser() user: AuthUser,
    @Body() body: CompleteBody = {},
    @ClientAbortSignal() signal: AbortSignal,
  ): Promise<Completion> {
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

    let charged: RateLimitDecision | undefined;
    let month: RateLimitDecision | undefined;
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
    // consumeMany answers one decision per item, in their order.
    if (charged === undefined || month === undefined)
      throw new Error('consumeMany answered fewer decisions than items');
    // The module's exception filter answers 429 with Retry-After, as for the guard's own denials.
    if (!charged.allowed) throw new RateLimitExceededException(charged);
    if (!month.allowed) throw new RateLimitExceededException(month);
    const before = { tokensRemaining: charged.remaining, monthlyRemaining: month.remaining };

    let answer: ModelAnswer;
    try {
      // Waits for a slot in the provider's budget (up to 5 s), then calls it; gives up when the client does.
      answer = await this.provider.complete({ prompt, maxTokens }, signal);
    } catch (error) {
      // Nothing was generated, so nothing is owed. The provider's 429 (its budget had no slot in time, with its
      // Retry-After) goes to the client as it is; a client that left gets 499, which nobody reads.
      await this.refund(key, user.plan, estimate, before);
      throw signal.aborted ? signal.reason : error;
    }
    const used = promptTokens + answer.completionTokens;
    return {
      completion: `(fake completion: ${answer.completionTokens} tokens for a ${promptTokens}-token prompt)`,
      usage: { promptTokens, completionTokens: answer.completionTokens, totalTokens: used },
      ...(await this.refund(key, user.plan, estimate - used, before)), // the model used less than the estimate
    };
  }

  /**
   * Gives `amount` back to the caller's bucket and month, and returns what they then hold (`before`, the
   * remainders after the charge, where a refund failed). A failed refund only costs the caller those tokens.
   */
  private async refund(
    key: string,
    plan: AuthUser['plan'],
    amount: number,
    before: Pick<Completion, 'tokensRemaining' | 'monthlyRemaining'>,
  ): Promise<Pick<Completion, 'tokensRemaining' | 'monthlyRemaining'>> {
    const after = { ...before };
    try {
      after.tokensRemaining = (await this.rateLimits.refund('ai-tokens', key, amount)).remaining;
      after.monthlyRemaining = (await this.rateLimits.refund(monthly[plan], key, amount)).remaining;
    } catch (error) {
      this.logger.warn(`could not refund ${amount} ai-tokens to ${key}: ${(error as Error).message}`);
    }
    return after;
  }

  /** The caller's model-token usage this month: what an invoice would read. */
  @Get('usage')
  async usage(
    @CurrentUser() user: AuthUser,
  ): Promise<{ used: number; limit: number | undefined; periodStart: Date; periodEnd: Date }> {
    return this.rateLimits.usage(monthly[user.plan], `user:${user.id}`);
  }
}
