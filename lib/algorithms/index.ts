import type { RateLimitAlgorithm } from '../policy/policy.types.js';
import type { Algorithm } from './algorithm.js';
import { concurrency } from './concurrency/concurrency.js';
import { fixedWindow, fixedWindowFromFirstRequest } from './fixed-window/fixed-window.js';
import { gcra, gcraPerPlan } from './gcra/gcra.js';
import { quota } from './quota/quota.js';
import { slidingWindowCounter } from './sliding-window-counter/sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log/sliding-window-log.js';
import { tokenBucket } from './token-bucket/token-bucket.js';

export { type Algorithm, type StepResult } from './algorithm.js';

/**
 * The twins a policy is decided by: each algorithm's, the fixed window from a key's first request
 * (`anchor: 'first-request'`), and GCRA with a limit that is a function of the request (a per-plan limit),
 * whose state also keeps the limit it was written with.
 */
export type AlgorithmKernel = RateLimitAlgorithm | 'fixed-window-first-request' | 'gcra-per-plan';

/** The twins that decide a policy. */
export const kernelOf = (policy: {
  algorithm: RateLimitAlgorithm;
  anchor?: 'first-request';
  source?: { limit?: unknown };
}): AlgorithmKernel => {
  if (policy.algorithm === 'fixed-window' && policy.anchor === 'first-request') return 'fixed-window-first-request';
  if (policy.algorithm === 'gcra' && typeof policy.source?.limit === 'function') return 'gcra-per-plan';
  return policy.algorithm;
};

/** The TypeScript step of each algorithm. */
export const ALGORITHM_STEPS: Readonly<Record<AlgorithmKernel, Algorithm<unknown>>> = {
  'fixed-window': fixedWindow as Algorithm<unknown>,
  'sliding-window-log': slidingWindowLog as Algorithm<unknown>,
  'sliding-window-counter': slidingWindowCounter as Algorithm<unknown>,
  'token-bucket': tokenBucket as Algorithm<unknown>,
  gcra: gcra as Algorithm<unknown>,
  quota: quota as Algorithm<unknown>,
  concurrency: concurrency as Algorithm<unknown>,
  'fixed-window-first-request': fixedWindowFromFirstRequest as Algorithm<unknown>,
  'gcra-per-plan': gcraPerPlan as Algorithm<unknown>,
};

/**
 * The number by which the Redis program picks each algorithm's Lua twin (the dispatcher's MAKERS, by the CODE_*
 * constants of lua-constants.ts).
 */
export const ALGORITHM_CODES: Readonly<Record<AlgorithmKernel, number>> = {
  'fixed-window': 1,
  'sliding-window-log': 2,
  'sliding-window-counter': 3,
  'token-bucket': 4,
  gcra: 5,
  quota: 6,
  concurrency: 7,
  'fixed-window-first-request': 8,
  'gcra-per-plan': 9,
};
