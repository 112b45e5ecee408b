export { type Clock } from './clock.js';
export { RateLimitCircuitOpenError } from './engine/circuit-breaker.js';
export { RateLimitStoreTimeoutError } from './stores/store-timeout.js';
export { type RateLimitDecisionEvent } from './request/decision-events.js';
export { RateLimitPolicyError } from './policy/policy.errors.js';
export {
  ALGORITHMS,
  type FailMode,
  type QuotaPeriod,
  type RateLimitAlgorithm,
  type RateLimitCount,
  type RateLimitDecision,
  type RateLimitDecisionSource,
  type RateLimitKey,
  type RateLimitMode,
  type RateLimitDuration,
  type RateLimitIdentities,
  type RateLimitListEntry,
  type RateLimitListFunction,
  type RateLimitOutcome,
  type RateLimitPolicy,
  type RateLimitQuotaPolicy,
  type RateLimitScope,
  type RateLimitWindowPolicy,
  type ResolvedPolicy,
} from './policy/policy.types.js';
export { validatePolicy } from './policy/validate-policy.js';
export { RATE_LIMIT_CLOCK } from './rate-limit.constants.js';
export { RateLimit, SkipRateLimit } from './rate-limit.decorator.js';
export {
  RateLimitDenyListException,
  RateLimitExceededException,
  RateLimitExceptionFilter,
  RateLimitUnavailableException,
  type RateLimitErrorBody,
  type RateLimitProblem,
} from './rate-limit.exception.js';
export { RateLimitGuard } from './rate-limit.guard.js';
export { RateLimitInterceptor } from './rate-limit.interceptor.js';
export { RateLimitModule } from './rate-limit.module.js';
export {
  RATE_LIMIT_OPTIONS,
  type RateLimitModuleAsyncOptions,
  type RateLimitModuleOptionsFactory,
} from './rate-limit.module-definition.js';
export {
  type RateLimitErrors,
  type RateLimitHeaders,
  type RateLimitModuleOptions,
  type TrustProxy,
} from './rate-limit.options.js';
export { RateLimitService } from './rate-limit.service.js';
export { MemoryRateLimitStore, type MemoryRateLimitStoreOptions } from './stores/memory/memory.store.js';
export { PostgresRateLimitStore, type PostgresRateLimitStoreOptions } from './stores/postgres/postgres.store.js';
export { postgresSchemaSql } from './stores/postgres/rate-limit.sql.js';
export {
  type RateLimitChangeListener,
  RateLimitStore,
  type RateLimitStoreCall,
  type RateLimitStoreChange,
  type RateLimitStoreChanges,
  type RateLimitStoreItem,
} from './stores/rate-limit-store.js';
export { RateLimitStoreReplyError } from './stores/store-defects.js';
export type {
  NodeRedisClient,
  PgPool,
  PgQueryable,
  PgQueryResult,
  RedisClient,
  RedisConnection,
  RedisConnectionOptions,
  RedisSentinelAddress,
  ValkeyGlideClient,
} from './stores/client-types.js';
export { RedisRateLimitStore, type RedisRateLimitStoreOptions } from './stores/redis/redis.store.js';
