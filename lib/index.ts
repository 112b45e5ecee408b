export { type Clock, systemClock } from './clock.js';
export { RateLimitPolicyError } from './policy/policy.errors.js';
export {
  ALGORITHMS,
  type FailMode,
  type RateLimitAlgorithm,
  type RateLimitDecision,
  type RateLimitKey,
  type RateLimitPolicy,
  type ResolvedPolicy,
} from './policy/policy.types.js';
export { defaultPolicyName, validatePolicy } from './policy/validate-policy.js';
export { parseWindow } from './policy/window.js';
export { MemoryRateLimitStore, type MemoryRateLimitStoreOptions } from './stores/memory/memory.store.js';
export { type RateLimitStore, type RateLimitStoreItem } from './stores/rate-limit-store.js';
export { RedisRateLimitStore, type RedisRateLimitStoreOptions } from './stores/redis/redis.store.js';
export { storageKey } from './stores/storage-key.js';
