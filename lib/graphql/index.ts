/**
 * `nest-rate-limit/graphql`: what a GraphQL app meets of the limiter, the error of a denied resolver. Loads
 * neither `@nestjs/graphql` nor `graphql`.
 */
export { RateLimitGraphQLError, type RateLimitGraphQLExtensions } from '../contexts/graphql-error.js';
