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
 * @example await rateLimits.acquire(PROVIDER_RPM, PROVIDER_KEY, { maxWaitMs: PROVIDER_MAX_WAIT_MS });
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
/** How long the simulated provider takes to answer, in ms: long enough to see the concurrency limit with curl. */
export const MODEL_LATENCY_MS = 1_000;

/**
 * The network between the app and the provider: resolves when the provider has answered, rejects when
 * `signal` aborts. The sample's (SIMULATED_NETWORK) waits MODEL_LATENCY_MS; tests replace it to hold calls in
 * flight or to answer at once.
 * @example providers: [{ provide: ModelNetwork, useValue: SIMULATED_NETWORK }]
 */
export interface ModelNetwork {
  roundTrip(signal?: AbortSignal): Promise<void>;
}
/** The DI token of ModelNetwork. */
export const ModelNetwork = Symbol('ModelNetwork');

/** A round trip of MODEL_LATENCY_MS, as a real provider's API would take. */
export const SIMULATED_NETWORK: ModelNetwork = {
  roundTrip: async (signal) => {
    await sleep(MODEL_LATENCY_MS, undefined, { signal });
  },
};

/** What the app asks of the model: a prompt, and at most `maxTokens` tokens of completion. */
export interface ModelRequest {
  prompt: string;
  maxTokens: number;
}

/** What the model answered: how many tokens of completion it generated. */
export interface ModelAnswer {
  completionTokens: number;
}

/**
 * A stub of an AI provider's client. Before each call it waits its turn in the provider's budget
 * (`RateLimitService.acquire`, shared by every instance on Redis) instead of sending a request the provider
 * would refuse; the fake model then generates half of `maxTokens`.
 * @example const { completionTokens } = await provider.complete({ prompt, maxTokens }, signal);
 */
@Injectable()
export class AiProviderService {
  constructor(
    private readonly rateLimits: RateLimitService,
    @Inject(ModelNetwork) private readonly network: ModelNetwork,
  ) {}

  /**
   * Rejects with RateLimitExceededException (429, with the provider's Retry-After) when the budget has no slot
   * within PROVIDER_MAX_WAIT_MS; with RateLimitUnavailableException (503) when the budget cannot be read (the
   * store failed or timed out, or the app is shutting down); when `signal` aborts, while waiting or calling.
   */
  async complete(request: ModelRequest, signal?: AbortSignal): Promise<ModelAnswer> {
    try {
      await this.rateLimits.acquire(PROVIDER_RPM, PROVIDER_KEY, { maxWaitMs: PROVIDER_MAX_WAIT_MS, signal });
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
      // The store failed or timed out. Fail closed, as the handler does for its own charge: unchecked, every
      // instance would call the provider as fast as its callers ask, far past the limit it will enforce.
      throw new RateLimitUnavailableException(PROVIDER_RPM.name, 1);
    }
    await this.network.roundTrip(signal);
    return { completionTokens: Math.ceil(request.maxTokens / 2) };
  }
}
