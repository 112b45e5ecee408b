import type { ExecutionContext } from '@nestjs/common';

import type { AccessList } from '../lists/address-list.js';
import type { Criticality } from '../policy/criticality.js';
import type {
  FailMode,
  RateLimitCount,
  RateLimitKey,
  RateLimitMode,
  RateLimitPolicy,
  ResolvedPolicy,
} from '../policy/policy.types.js';
import type { ContextType, HandlerKind } from './handler-kinds.js';

/**
 * A counting rule that needs the outcome (every one but 'all'), or 'release': a concurrency limit's lease,
 * given back at the end of every invocation, whatever its outcome and also when the outcome is not seen.
 */
export type OutcomeRule = Exclude<RateLimitCount, 'all'> | 'release';

/** A policy of a route, with what the request-time work needs. */
export interface PlannedPolicy {
  readonly policy: ResolvedPolicy;
  /** A limit that depends on the request (the caller's plan). */
  readonly limit?: (ctx: ExecutionContext) => number | Promise<number>;
  /** A token-bucket or GCRA burst that depends on the request. */
  readonly burst?: (ctx: ExecutionContext) => number | Promise<number>;
  readonly key: RateLimitKey;
  /**
   * The policy itself says `key: 'user'` (not the default): it claims a limit per account, so counting an
   * anonymous request by its IP is worth a warning. The default key claimed nothing, so it falls back quietly.
   */
  readonly explicitUser: boolean;
  readonly cost: RateLimitPolicy['cost'];
  readonly failMode: FailMode;
  /** Mode 'shadow' (the policy's, else the module's): decided and reported, never denying. */
  readonly shadow: boolean;
  /**
   * Which outcomes count; undefined for 'all' (nothing to watch). 'release' for a concurrency limit: its slot
   * is given back whatever the outcome, also when it is not seen (the client left).
   */
  readonly count: OutcomeRule | undefined;
  readonly where: string;
  /** The policy's allow and deny lists, compiled at start; undefined when it has none. */
  readonly allow?: AccessList;
  readonly deny?: AccessList;
}

/** A policy at its place in a route's plan (headers list policies in that order). */
export interface PlanEntry {
  readonly planned: PlannedPolicy;
  readonly order: number;
}

/** The policies of one handler of one class, merged and validated once, at start. */
export interface RoutePlan {
  /** `Class.method`, for errors. */
  readonly where: string;
  readonly kind: HandlerKind;
  readonly policies: readonly PlanEntry[];
  /** The policies not keyed by the user, which the global guard decides before authentication. */
  readonly early: readonly PlanEntry[];
  /** The user-keyed policies, decided after every guard when the global guard finds no user yet. */
  readonly late: readonly PlanEntry[];
  /**
   * The route has user-keyed policies and guards of its own (which may authenticate): when the global guard
   * finds no user, the late policies wait for the interceptor the limiter attached to this handler.
   */
  readonly deferred: boolean;
  /**
   * Allow or deny lists apply to the handler (the module's, or those of its policies): it has policies and
   * some list. False costs a request nothing.
   */
  readonly lists: boolean;
  /** Some policy counts by outcome: allowed invocations are watched until they end. */
  readonly counted: boolean;
  /** Some policy settles its charge at the actual cost (RateLimitPolicy.settle), from the handler's result. */
  readonly settled: boolean;
  /** `@Criticality` of the handler, else of its class, else `'default'`: its place when load is shed. */
  readonly criticality: Criticality;
}

export interface RoutePlannerOptions {
  readonly defaults: readonly RateLimitPolicy[];
  readonly failMode: FailMode;
  readonly mode: RateLimitMode;
  /** Whether the module's `user` option is set (so `'user'` keys can be read in RPC contexts). */
  readonly hasUserOption: boolean;
  /** Whether the module's options have an `allow` or a `deny` list. */
  readonly moduleLists: boolean;
  /** `global: false`: the application places RateLimitGuard, so the planner notes the handlers it does not cover. */
  readonly guardsPlaced: boolean;
  /** The module's `key` option: the key of every policy that names none (else `'user'`). */
  readonly key: RateLimitKey | undefined;
}

/** A handler the limiter guards itself: a microservice handler, or a gateway's message handler. */
export interface GuardedHandler {
  readonly context: 'rpc' | 'ws';
  readonly classRef: object;
  readonly prototype: object;
  readonly method: string;
}

/** What the walk over the application found: the context types in use, and handlers needing deferral. */
export interface PlannedApplication {
  readonly contexts: ReadonlySet<ContextType>;
  readonly deferred: readonly { readonly prototype: object; readonly method: string }[];
  /**
   * Microservice and gateway handlers with policies, which the application's global guard may not reach (a
   * hybrid app's microservice without `inheritAppConfig`; gateways before @nestjs/websockets 12).
   */
  readonly guarded: readonly GuardedHandler[];
  /**
   * Handlers with `count` policies whose results the outcome interceptor shows to the outcome watch (all but
   * HTTP routes whose only counted policies are concurrency limits: their response's end is enough).
   */
  readonly counted: readonly { readonly prototype: object; readonly method: string }[];
  /** Handlers with `settle` policies, whose results the settlement interceptor shows to the settlement. */
  readonly settled: readonly { readonly prototype: object; readonly method: string }[];
  /**
   * The handlers outside HTTP (microservice handlers, gateway messages, root resolvers), whose load shedding
   * (the `shedding` option) an interceptor of the limiter's decides: their invocations end with their result.
   */
  readonly outsideHttp: readonly { readonly classRef: object; readonly prototype: object; readonly method: string }[];
  /**
   * With `global: false`, handlers with policies that no RateLimitGuard or RateLimitInterceptor of their own
   * covers: the start stops unless one is global (known only once the application's providers are applied).
   */
  readonly unguarded: readonly RoutePlan[];
}

export const NO_POLICIES: RoutePlan = Object.freeze({
  where: '',
  kind: 'none',
  policies: [],
  early: [],
  late: [],
  deferred: false,
  lists: false,
  counted: false,
  settled: false,
  criticality: 'default',
});
