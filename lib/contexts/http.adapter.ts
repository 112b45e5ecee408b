import type { IncomingMessage, ServerResponse } from 'node:http';

import type { ExecutionContext } from '@nestjs/common';

import { clientAddress, clientIp, ForwardedForCheck } from '../keys/client-ip.js';
import type { RateLimitDecision } from '../policy/policy.types.js';
import {
  RateLimitDenyListException,
  RateLimitExceededException,
  RateLimitOverloadedException,
  RateLimitUnavailableException,
} from '../responses/rate-limit-exceptions.js';
import type * as Adapter from './context-adapter.js';

/** The client address of a request, once computed (several policies may be keyed by it). */
const CLIENT_IP = Symbol('nest-rate-limit:client-ip');
/** The client's full address (what lists match), once computed; null when the request has none. */
const CLIENT_ADDRESS = Symbol('nest-rate-limit:client-address');

/** An Express or Fastify request, as far as the limiter reads it. */
interface HttpRequest {
  user?: { id?: unknown; sub?: unknown } | null;
  raw?: IncomingMessage;
  [CLIENT_IP]?: string;
  [CLIENT_ADDRESS]?: string | null;
}

/** The user id at `req.user.id` (or `.sub`, as JWTs have it), if it is a string or a number. */
export function userIdOf(user: { id?: unknown; sub?: unknown } | null | undefined): string | undefined {
  const id = user?.id ?? user?.sub;
  return typeof id === 'string' || typeof id === 'number' || typeof id === 'bigint' ? String(id) : undefined;
}

/**
 * The request and the response of an HTTP invocation: its first two arguments, which is what
 * `ctx.switchToHttp().getRequest()` and `.getResponse()` return, without the three functions Nest's
 * switchToHttp() makes on every call (the request path asks several times per request).
 */
const requestOf = <T>(ctx: ExecutionContext): T => ctx.getArgByIndex<T>(0);
const responseOf = <T>(ctx: ExecutionContext): T => ctx.getArgByIndex<T>(1);

/** HTTP on Express or Fastify: headers on the response, 429, 503 and 403 as HttpExceptions. */
class HttpContextAdapter implements Adapter.ContextAdapter {
  readonly type = 'http';
  private readonly forwardedFor = new ForwardedForCheck('A request');

  constructor(private readonly settings: Adapter.AdapterSettings) {}

  invocation(ctx: ExecutionContext): object {
    return requestOf<object>(ctx);
  }

  clientIp(ctx: ExecutionContext): string {
    const req = requestOf<HttpRequest>(ctx);
    const known = req[CLIENT_IP];
    if (known !== undefined) return known;
    return (req[CLIENT_IP] = clientIp(this.incoming(req), this.settings.trust, this.settings.ipv6Prefix));
  }

  clientAddress(ctx: ExecutionContext): string | undefined {
    const req = requestOf<HttpRequest>(ctx);
    const known = req[CLIENT_ADDRESS];
    if (known !== undefined) return known ?? undefined;
    const address = clientAddress(this.incoming(req), this.settings.trust);
    req[CLIENT_ADDRESS] = address ?? null;
    return address;
  }

  /** The Node request under an Express or Fastify one; warns once about an X-Forwarded-For nobody trusts. */
  private incoming(req: HttpRequest): IncomingMessage {
    const raw = req.raw ?? (req as unknown as IncomingMessage);
    this.forwardedFor.check(raw.headers, this.settings.trust, this.settings.logger);
    return raw;
  }

  defaultUser(ctx: ExecutionContext): string | undefined {
    return userIdOf(requestOf<HttpRequest>(ctx).user);
  }

  setHeaders(ctx: ExecutionContext, headers: readonly (readonly [string, string])[]): void {
    const res = responseOf<object>(ctx);
    const adapter = this.settings.httpAdapterHost.httpAdapter;
    for (const [name, value] of headers) adapter.setHeader(res, name, value);
  }

  deny(
    _ctx: ExecutionContext,
    _denial: Adapter.RateLimitDenial,
    decision: RateLimitDecision,
    violated?: readonly string[],
  ): never {
    throw new RateLimitExceededException(decision, violated);
  }

  unavailable(_ctx: ExecutionContext, outage: Adapter.RateLimitUnavailable): never {
    throw new RateLimitUnavailableException(outage.policy, outage.retryAfter);
  }

  forbid(_ctx: ExecutionContext, refusal: Adapter.RateLimitRefusal): never {
    throw new RateLimitDenyListException(refusal.message);
  }

  overloaded(_ctx: ExecutionContext, overload: Adapter.RateLimitOverloaded): never {
    throw new RateLimitOverloadedException(overload.criticality, overload.retryAfter);
  }

  /**
   * The end of the Node response (Express's own, Fastify's `reply.raw`), with the status it was ended with,
   * whoever wrote it (the handler, an exception filter, a later guard's refusal). A connection that closes
   * before the response was ended (the client left while the handler ran) gives undefined.
   */
  watchEnd(ctx: ExecutionContext, end: (status: number | undefined) => void): void {
    const reply = responseOf<{ raw?: ServerResponse }>(ctx);
    const res = reply.raw ?? (reply as ServerResponse);
    let done = false;
    const onEnd = (): void => {
      if (done) return;
      done = true;
      res.removeListener('finish', onEnd);
      res.removeListener('close', onEnd);
      // Ended by the server: its status is final, even if the client did not stay to read all of it.
      end(res.writableEnded ? res.statusCode : undefined);
    };
    // The client left before this (while a slow middleware ran, say): 'close' is past, and 'finish' never comes.
    if (res.destroyed || res.writableFinished) {
      process.nextTick(onEnd);
      return;
    }
    // on(), not once(): onEnd removes both itself, and once() would wrap each in a function of its own
    res.on('finish', onEnd);
    res.on('close', onEnd);
  }
}

export const httpAdapter: Adapter.AdapterFactory = (settings) => new HttpContextAdapter(settings);
