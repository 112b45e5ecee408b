/**
 * `nest-rate-limit/websockets`: what a gateway's clients receive from the limiter (the data of Nest's `exception`
 * event). Types only: loads nothing, `@nestjs/websockets` included.
 */
export type {
  WsDenyListError,
  WsOverloadedError,
  WsRateLimitedError,
  WsUnavailableError,
} from '../contexts/ws.adapter.js';
