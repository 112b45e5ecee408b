import type { IncomingMessage } from 'node:http';

import type { ExecutionContext } from '@nestjs/common';
import type * as NestGraphQL from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';

import { clientAddress, clientIp, ForwardedForCheck } from '../keys/client-ip.js';
import { importPeer } from '../util/optional-peer.js';
import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';
import type * as Adapter from './context-adapter.js';
import { RateLimitGraphQLError } from './graphql-error.js';
import { GraphQLResponseFields } from './graphql-response-fields.js';
import {
  type FastifyReplyLike,
  type GraphQLContextValue,
  isNodeResponse,
  isObject,
  type NodeResponse,
  requestIn,
  responseIn,
} from './graphql-context-value.js';
import { userIdOf } from './http.adapter.js';
import { handlerLabel } from '../util/handler-label.js';

/**
 * The GraphQL adapter (`ctx.getType() === 'graphql'`), for Nest's Apollo and Mercurius drivers and any driver
 * whose context holds the HTTP request as `req`. One resolver invocation is one decision: the limiter keeps
 * its state on the invocation's arguments array, so a field selected under two aliases is charged twice.
 */
class GraphQLContextAdapter implements Adapter.ContextAdapter {
  readonly type = 'graphql' as const;
  /** Client addresses per HTTP request: the resolvers of one operation share them. */
  private readonly addresses = new WeakMap<IncomingMessage, string>();
  /** Full client addresses (what lists match) per HTTP request; null when it has none. */
  private readonly fullAddresses = new WeakMap<IncomingMessage, string | null>();
  /** What each HTTP response's rate-limit fields have shown: the resolvers of an operation share them. */
  private readonly responseFields = new GraphQLResponseFields();
  private readonly forwardedFor = new ForwardedForCheck('A GraphQL request');
  private warnedNoRequest = false;
  private warnedNoResponse = false;

  /** @param GqlExecutionContext @nestjs/graphql's (loaded by the factory). */
  constructor(
    private readonly settings: Adapter.AdapterSettings,
    private readonly GqlExecutionContext: typeof NestGraphQL.GqlExecutionContext,
  ) {}

  /**
   * Nest's external context creator calls a resolver's guards and interceptors with one `args` array
   * (`[root, args, context, info]`) made for that invocation, so the array itself identifies it. (Called
   * with a GqlExecutionContext, `getArgs()` is the GraphQL arguments object, also made per invocation.)
   */
  invocation(ctx: ExecutionContext): object {
    const args: unknown = ctx.getArgs();
    if (!isObject(args)) {
      throw new TypeError(
        `nest-rate-limit: the GraphQL execution context of ${this.where(ctx)} has no arguments array ` +
          `(got ${args === null ? 'null' : typeof args}); was it made by Nest's GraphQL module?`,
      );
    }
    return args;
  }

  clientIp(ctx: ExecutionContext): string | undefined {
    const raw = this.requestOf(ctx);
    if (raw === undefined) return undefined;
    const known = this.addresses.get(raw);
    if (known !== undefined) return known;
    this.forwardedFor.check(raw.headers, this.settings.trust, this.settings.logger);
    const address = clientIp(raw, this.settings.trust, this.settings.ipv6Prefix);
    this.addresses.set(raw, address);
    return address;
  }

  clientAddress(ctx: ExecutionContext): string | undefined {
    const raw = this.requestOf(ctx);
    if (raw === undefined) return undefined;
    const known = this.fullAddresses.get(raw);
    if (known !== undefined) return known ?? undefined;
    this.forwardedFor.check(raw.headers, this.settings.trust, this.settings.logger);
    const address = clientAddress(raw, this.settings.trust);
    this.fullAddresses.set(raw, address ?? null);
    return address;
  }

  /** The operation's HTTP request; warns once when there is none. */
  private requestOf(ctx: ExecutionContext): IncomingMessage | undefined {
    const raw = this.incomingMessage(ctx);
    if (raw === undefined) {
      if (!this.warnedNoRequest) {
        this.warnedNoRequest = true;
        this.settings.logger.warn(
          `The GraphQL context of ${this.where(ctx)} holds no HTTP request (as "req", "request" or ` +
            `graphql-ws's "extra.request"), so 'ip' keys cannot be resolved there. If your GraphQL module ` +
            `has a context function, keep the request in what it returns: ({ req }) => ({ req, ... }).`,
        );
      }
      return undefined;
    }
    return raw;
  }

  /** `req.user?.id ?? req.user?.sub` of the context's request (Express or Fastify), as the HTTP adapter reads it. */
  defaultUser(ctx: ExecutionContext): string | undefined {
    const gql = this.contextValue(ctx);
    const req = gql?.req ?? gql?.request;
    return isObject(req) ? userIdOf(req.user as Parameters<typeof userIdOf>[0]) : undefined;
  }

  /**
   * Every rate-limited resolver of an operation writes the same header names on its one HTTP response, so each
   * writes what all of them decided so far: the last one's fields then name every policy of the operation.
   */
  accumulate(
    ctx: ExecutionContext,
    policies: readonly ResolvedPolicy[],
    decisions: readonly RateLimitDecision[],
  ): Adapter.ShownDecisions {
    const response = decisions.length === 0 ? undefined : this.responseOf(ctx);
    if (response === undefined) return { policies, decisions };
    return this.responseFields.accumulate(response, policies, decisions);
  }

  /**
   * Writes the fields on the operation's HTTP response: Mercurius's `reply` (Fastify), else Express's `req.res`.
   * `Retry-After` never shortens: of the resolvers sharing a response, the one that waits longest decides when
   * the client may retry the operation. Over a WebSocket (subscriptions) there is no response to write to, and
   * nothing is written.
   */
  setHeaders(ctx: ExecutionContext, headers: readonly (readonly [string, string])[]): void {
    if (headers.length === 0) return;
    const response = this.responseOf(ctx);
    if (isNodeResponse(response)) {
      if (response.headersSent) return;
      for (const [name, value] of headers)
        response.setHeader(name, this.responseFields.headerValue(response, name, value));
      return;
    }
    if (response !== undefined) {
      if (response.sent === true || response.raw?.headersSent === true) return;
      for (const [name, value] of headers)
        response.header(name, this.responseFields.headerValue(response, name, value));
      return;
    }
    if (!this.warnedNoResponse && !this.isSubscription(ctx)) {
      this.warnedNoResponse = true;
      this.settings.logger.warn(
        `The GraphQL context of ${this.where(ctx)} holds no HTTP response (Fastify "reply" or Express ` +
          `"req.res"), so its rate-limit headers are not sent. With Apollo on Fastify, return the reply from ` +
          `your context function: (req, reply) => ({ req, reply }).`,
      );
    }
  }

  deny(_ctx: ExecutionContext, denial: Adapter.RateLimitDenial, _decision: RateLimitDecision): never {
    throw new RateLimitGraphQLError(
      denial.message,
      denial.retryAfter === undefined
        ? { code: denial.code, policy: denial.policy }
        : { code: denial.code, policy: denial.policy, retryAfter: denial.retryAfter },
    );
  }

  /** The field fails with RATE_LIMIT_UNAVAILABLE; the HTTP response (when there is one) gets `Retry-After`. */
  unavailable(ctx: ExecutionContext, outage: Adapter.RateLimitUnavailable): never {
    this.setHeaders(ctx, [['Retry-After', String(outage.retryAfter)]]);
    throw new RateLimitGraphQLError(outage.message, {
      code: outage.code,
      policy: outage.policy,
      retryAfter: outage.retryAfter,
    });
  }

  /** The field fails with OVERLOADED (load shedding), and the response gets `Retry-After`. */
  overloaded(ctx: ExecutionContext, overload: Adapter.RateLimitOverloaded): never {
    this.setHeaders(ctx, [['Retry-After', String(overload.retryAfter)]]);
    const { code, criticality, retryAfter } = overload;
    throw new RateLimitGraphQLError(overload.message, { code, criticality, retryAfter });
  }

  /** The field fails with RATE_LIMIT_DENY_LIST; no headers (retrying cannot help). */
  forbid(_ctx: ExecutionContext, refusal: Adapter.RateLimitRefusal): never {
    throw new RateLimitGraphQLError(refusal.message, { code: refusal.code });
  }

  /** The operation's HTTP response: Mercurius's `reply` (Fastify), else Express's `req.res`; undefined without one. */
  private responseOf(ctx: ExecutionContext): FastifyReplyLike | NodeResponse | undefined {
    return responseIn(this.contextValue(ctx));
  }

  private contextValue(ctx: ExecutionContext): GraphQLContextValue | undefined {
    const value: unknown = this.GqlExecutionContext.create(ctx).getContext();
    return isObject(value) ? (value as GraphQLContextValue) : undefined;
  }

  /** The HTTP request under the operation: the context's `req`, `request` (Mercurius subscriptions) or graphql-ws's. */
  private incomingMessage(ctx: ExecutionContext): IncomingMessage | undefined {
    const gql = this.contextValue(ctx);
    return gql === undefined ? undefined : requestIn(gql);
  }

  private isSubscription(ctx: ExecutionContext): boolean {
    const info: unknown = this.GqlExecutionContext.create(ctx).getInfo();
    return isObject(info) && (info as unknown as GraphQLResolveInfo).operation?.operation === 'subscription';
  }

  /** `Resolver.method`, for messages. */
  private where(ctx: ExecutionContext): string {
    return handlerLabel(ctx.getClass(), ctx.getHandler(), 'resolver');
  }
}

/**
 * Makes the GraphQL adapter. Called by the module only when the application has GraphQL resolvers, so
 * `@nestjs/graphql` (loaded here, where bundlers do not resolve it: see importPeer) stays optional for every
 * other app.
 */
export const graphqlAdapter: Adapter.AdapterFactory = async (settings) => {
  const { GqlExecutionContext } = await importPeer<typeof NestGraphQL>('@nestjs/graphql');
  return new GraphQLContextAdapter(settings, GqlExecutionContext);
};
