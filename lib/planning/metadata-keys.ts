/** Metadata key of @RateLimit. */
export const RATE_LIMIT_POLICIES = 'nest-rate-limit:policies';
/** Metadata key of @SkipRateLimit. */
export const RATE_LIMIT_SKIP = 'nest-rate-limit:skip';
/** Metadata key of @Criticality. */
export const RATE_LIMIT_CRITICALITY = 'nest-rate-limit:criticality';
