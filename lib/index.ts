export { type Clock } from './util/clock.js';
export { RateLimitCircuitOpenError } from './engine/circuit-breaker.js';
export { RateLimitStoreTimeoutError } from './stores/store-timeout.js';
export { type RateLimitDecisionEvent, type RateLimitOverrideOutcome } from './limiter/decision-events.js';
export type { RateLimitOverride, RateLimitOverrideChange } from './policy/override.js';
export { RateLimitPolicyError } from './policy/policy.errors.js';
export {
  type RateLimitDecision,
  type RateLimitDecisionSource,
  type RateLimitKey,
  type RateLimitDuration,
  type RateLimitIdentities,
  type RateLimitOutcome,
  type RateLimitPolicy,
  type RateLimitQuotaPolicy,
  type RateLimitWindowPolicy,
  type ResolvedPolicy,
} from './policy/policy.types.js';
export { validatePolicy } from './policy/validate-policy.js';
export { RATE_LIMIT_CLOCK } from './nest/rate-limit.constants.js';
export { RateLimit, SkipRateLimit } from './nest/rate-limit.decorator.js';
export { Criticality } from './nest/criticality.decorator.js';
export { RateLimitExceptionFilter } from './nest/rate-limit.exception-filter.js';
export {
  RateLimitDenyListException,
  RateLimitExceededException,
  RateLimitOverloadedException,
  RateLimitUnavailableException,
  type RateLimitErrorBody,
  type RateLimitProblem,
} from './responses/rate-limit-exceptions.js';
export { RateLimitGuard } from './nest/rate-limit.guard.js';
export { RateLimitInterceptor } from './nest/rate-limit.interceptor.js';
export { RateLimitModule } from './nest/rate-limit.module.js';
export {
  RATE_LIMIT_OPTIONS,
  type RateLimitModuleAsyncOptions,
  type RateLimitModuleOptionsFactory,
} from './nest/rate-limit.module-definition.js';
export { type RateLimitModuleOptions, type RateLimitSheddingOptions } from './nest/rate-limit.options.js';
export { RateLimitService } from './nest/rate-limit.service.js';
export { type RateLimitReservation } from './service/reservation.js';
export { type RateLimitServiceItem } from './service/service-core.js';
export { MemoryRateLimitStore, type MemoryRateLimitStoreOptions } from './stores/memory/memory.store.js';
export { PostgresRateLimitStore, type PostgresRateLimitStoreOptions } from './stores/postgres/postgres.store.js';
export { postgresSchemaSql } from './stores/postgres/rate-limit.sql.js';
export { RateLimitStore, type RateLimitStoreItem } from './stores/rate-limit-store.js';
export { RateLimitStoreReplyError } from './stores/store-defects.js';
export { RedisRateLimitStore, type RedisRateLimitStoreOptions } from './stores/redis/redis.store.js';
