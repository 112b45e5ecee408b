import type { ServerResponse } from 'node:http';

import { createParamDecorator, type ExecutionContext, HttpException } from '@nestjs/common';

/**
 * 499 Client Closed Request (nginx's code): the reason a ClientAbortSignal aborts with. Nobody reads the
 * answer, and as an HttpException it is not logged as a crash of the handler.
 */
export class ClientClosedRequestException extends HttpException {
  constructor() {
    super('Client Closed Request', 499);
  }
}

/**
 * An AbortSignal that aborts (with ClientClosedRequestException) when the client goes away before its response
 * was sent, on Express and Fastify. Pass it to waits and outbound calls, so that work nobody will read stops:
 * the limiter gives a concurrency slot back when the client goes away, and the handler should not go on
 * spending what the lease was limiting.
 * @example async complete(@ClientAbortSignal() signal: AbortSignal) { await provider.complete(request, signal); }
 */
export const ClientAbortSignal = createParamDecorator((_data: unknown, ctx: ExecutionContext): AbortSignal => {
  const reply = ctx.switchToHttp().getResponse<ServerResponse | { raw: ServerResponse }>();
  const res = 'raw' in reply ? reply.raw : reply; // a Fastify reply wraps Node's response; Express's is one
  const controller = new AbortController();
  const abort = () => controller.abort(new ClientClosedRequestException());
  if (res.destroyed) {
    abort(); // gone before the handler started
  } else {
    // 'close' also comes after a response that was sent: only one closed before it ended means the client left.
    res.once('close', () => {
      if (!res.writableEnded) abort();
    });
  }
  return controller.signal;
});
