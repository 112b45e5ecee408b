import type { RateLimitDenial, RateLimitOverloaded, RateLimitUnavailable } from './context-adapter.js';

/** What the client of a denied request-response message receives as the error of `ClientProxy.send()`. */
export interface RpcRateLimitedError extends RateLimitDenial {
  /** As Nest's own RPC errors (`{ status: 'error', message }`), so clients that check it keep working. */
  readonly status: 'error';
}

/** What the client of a request-response message receives when a deny list names it. */
export interface RpcDenyListError {
  readonly status: 'error';
  readonly code: 'RATE_LIMIT_DENY_LIST';
  readonly message: string;
}

/** What the client of a request-response message receives when a fail-closed policy's store is down. */
export interface RpcUnavailableError extends RateLimitUnavailable {
  readonly status: 'error';
}

/** What the client of a request-response message receives when load shedding refuses it. */
export interface RpcOverloadedError extends RateLimitOverloaded {
  readonly status: 'error';
}
