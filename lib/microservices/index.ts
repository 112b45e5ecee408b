/**
 * `nest-rate-limit/microservices`: what a microservice's clients receive from the limiter (the error of
 * `ClientProxy.send()`), and what a dropped event throws. Loads no `@nestjs/microservices`.
 */
export { RateLimitDroppedEvent } from '../contexts/context-adapter.js';
export type {
  RpcDenyListError,
  RpcOverloadedError,
  RpcRateLimitedError,
  RpcUnavailableError,
} from '../contexts/rpc-errors.js';
