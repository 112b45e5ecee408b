import { HttpException, Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  RateLimitExceededException,
  RateLimitPolicyError,
  RateLimitService,
  RateLimitUnavailableException,
  type RateLimitWindowPolicy,
} from '../lib/index.js';

/**
 * The model provider's own limit on this app's account, for every instance of the app at once (with REDIS_URL):
 * 30 requests per minute, at most 3 at once, then one every 2 s. Small, so that the walkthrough can reach it; a
 * real provider's is in the hundreds or thousands per minute. GCRA spaces requests out as providers do.
 * @example await rateLimits.acquire(PROVIDER_RPM, PROVIDER_KEY, { maxWaitMs: PROVIDER_MAX_WAIT_MS, fairKey: tenant });
 */
export const PROVIDER_RPM = {
  name: 'provider-rpm',
  algorithm: 'gcra',
  limit: 30,
  window: '1m',
  burst: 3,
} satisfies RateLimitWindowPolicy;
/** The one key of PROVIDER_RPM: the budget is the app's account at the provider, whoever the caller is. */
export const PROVIDER_KEY = 'ai-provider';
/**
 * How long a completion may wait for the provider's budget, in ms: two slots of PROVIDER_RPM. Past it the
 * caller gets 429 with Retry-After rather than a request that hangs while the queue grows.
 */
export const PROVIDER_MAX_WAIT_MS = 5_000;
/** How long the simulated model takes to generate a whole completion, in ms: long enough to see limits with curl. */
export const MODEL_LATENCY_MS = 1_000;

/** What the app asks of the model: a prompt, and at most `maxTokens` tokens of completion. */
export interface ModelRequest {
  prompt: string;
  maxTokens: number;
}

/** The tokens a call used, as the provider counts (and bills) them. */
export interface ModelUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** A piece of a streamed completion: some text, or, last, the usage (where model SDKs put it). */
export type ModelChunk = { text: string } | { usage: ModelUsage };

/**
 * The provider's API: streams a completion, its usage last; stops (rejects with the signal's reason) when
 * `signal` aborts. The sample's (SIMULATED_MODEL) takes MODEL_LATENCY_MS; tests replace it with a model whose
 * usage they set, and which holds calls in flight until they let them go.
 * @example providers: [{ provide: ModelApi, useValue: SIMULATED_MODEL }]
 */
export interface ModelApi {
  generate(request: ModelRequest, signal?: AbortSignal): AsyncIterable<ModelChunk>;
}
/** The DI token of ModelApi. */
export const ModelApi = Symbol('ModelApi');

/** How the simulated model counts a prompt: about 4 characters per token. */
export const promptTokensOf = (prompt: string): number => Math.ceil(prompt.length / 4);

/** The text of every simulated completion, in the chunks it streams them in. */
const SIMULATED_TEXT = ['This ', 'is ', 'a fake ', 'completion.'];

/** A fake model: its text in 4 chunks over MODEL_LATENCY_MS, generating half of `maxTokens`, then the usage. */
export const SIMULATED_MODEL: ModelApi = {
  async *generate({ prompt, maxTokens }, signal) {
    for (const text of SIMULATED_TEXT) {
      await sleep(MODEL_LATENCY_MS / SIMULATED_TEXT.length, undefined, { signal });
      yield { text };
    }
    const promptTokens = promptTokensOf(prompt);
    const completionTokens = Math.ceil(maxTokens / 2);
    yield { usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens } };
  },
};

/** A whole completion: its text, and what it used. */
export interface ModelAnswer {
  text: string;
  usage: ModelUsage;
}

/**
 * The app's client of the AI provider. Before each call it waits its turn in the provider's budget
 * (`RateLimitService.acquire`, exact across every instance on Redis) instead of sending a request the provider
 * would refuse; the waiters of different tenants take turns (`fairKey`), so one tenant's burst does not make
 * the others wait for all of it.
 * @example const { text, usage } = await provider.complete({ prompt, maxTokens }, user.id, signal);
 */
@Injectable()
export class AiProviderService {
  constructor(
    private readonly rateLimits: RateLimitService,
    @Inject(ModelApi) private readonly model: ModelApi,
  ) {}

  /** Waits for a slot of the budget (see `stream`), then collects the whole completion. */
  async complete(request: ModelRequest, tenant: string, signal?: AbortSignal): Promise<ModelAnswer> {
    let text = '';
    for await (const chunk of this.stream(request, tenant, signal)) {
      if ('usage' in chunk) return { text, usage: chunk.usage };
      text += chunk.text;
    }
    throw new Error('the model ended its stream without its usage');
  }

  /**
   * Waits for a slot of the budget, then streams the completion. Rejects with RateLimitExceededException (429,
   * with the provider's Retry-After) when the budget has no slot within PROVIDER_MAX_WAIT_MS; with
   * RateLimitUnavailableException (503) when the budget cannot be read (the store failed or timed out, or the
   * app is shutting down); when `signal` aborts, while waiting or generating.
   */
  async *stream(request: ModelRequest, tenant: string, signal?: AbortSignal): AsyncGenerator<ModelChunk> {
    await this.waitForSlot(tenant, signal);
    yield* this.model.generate(request, signal);
  }

  private async waitForSlot(tenant: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.rateLimits.acquire(PROVIDER_RPM, PROVIDER_KEY, {
        maxWaitMs: PROVIDER_MAX_WAIT_MS,
        fairKey: tenant, // the tenants waiting take turns
        signal,
      });
    } catch (error) {
      if (error instanceof RateLimitExceededException && error.retryAfter !== null) {
        // The caller did nothing wrong: say whose budget is used up, so the 429 does not read as the caller's.
        throw new RateLimitExceededException({
          ...error.decision,
          message: `The AI provider is at its limit of ${PROVIDER_RPM.limit} requests per minute for this service; retry in ${error.retryAfter} s`,
        });
      }
      if (signal?.aborted === true || error instanceof HttpException || error instanceof RateLimitPolicyError) {
        throw error;
      }
      // The store failed or timed out. Fail closed: unchecked, every instance would call the provider as fast
      // as its callers ask, far past the limit it will enforce.
      throw new RateLimitUnavailableException(PROVIDER_RPM.name, 1);
    }
  }
}
