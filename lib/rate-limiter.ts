import type { IncomingMessage } from 'node:http';

import {
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type NestInterceptor,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { GUARDS_METADATA, INTERCEPTORS_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryService, HttpAdapterHost, MetadataScanner, Reflector } from '@nestjs/core';
import { from, switchMap } from 'rxjs';

import type { Clock } from './clock.js';
import { CircuitBreaker } from './circuit-breaker.js';
import { DenyCache } from './deny-cache.js';
import { FailureReporter } from './failure-reporter.js';
import { mostRestrictive, rateLimitHeaders, toSeconds } from './headers/rate-limit-headers.js';
import { clientIp, compileTrust, isTrustAll, isTrustNone, type TrustFn } from './keys/client-ip.js';
import { RateLimitPolicyError } from './policy/policy.errors.js';
import type {
  FailMode,
  RateLimitDecision,
  RateLimitKey,
  RateLimitPolicy,
  ResolvedPolicy,
} from './policy/policy.types.js';
import { checkCost, checkQuotaLimit, validatePolicy } from './policy/validate-policy.js';
import { RATE_LIMIT_CLOCK, RATE_LIMIT_POLICIES, RATE_LIMIT_SKIP, RATE_LIMIT_STORES } from './rate-limit.constants.js';
import type { RateLimitStores } from './rate-limit.module.js';
import { RateLimitExceededException, RateLimitUnavailableException } from './rate-limit.exception.js';
import { RATE_LIMIT_OPTIONS } from './rate-limit.module-definition.js';
import type { RateLimitHeaders, RateLimitModuleOptions } from './rate-limit.options.js';
import { MemoryRateLimitStore } from './stores/memory/memory.store.js';
import { RateLimitStore, type RateLimitStoreItem } from './stores/rate-limit-store.js';

/** A policy of a route, with what the request-time work needs. */
interface PlannedPolicy {
  readonly policy: ResolvedPolicy;
  /** A quota's limit that depends on the request (the caller's plan). */
  readonly limit?: (ctx: ExecutionContext) => number | Promise<number>;
  readonly key: RateLimitKey;
  readonly cost: RateLimitPolicy['cost'];
  readonly failMode: FailMode;
  readonly where: string;
}

/** The policies of one handler, merged and validated once. */
interface RoutePlan {
  readonly policies: readonly PlannedPolicy[];
  /** The policies not keyed by the user, which the global guard decides before authentication. */
  readonly early: readonly PlannedPolicy[];
  /** The user-keyed policies, decided after every guard when the global guard finds no user yet. */
  readonly late: readonly PlannedPolicy[];
  /**
   * The route has user-keyed policies and guards of its own (which may authenticate): when the global guard
   * finds no user, the late policies wait for the interceptor the limiter attached to this handler.
   */
  readonly deferred: boolean;
}

type PlannedItem = RateLimitStoreItem & { readonly planned: PlannedPolicy };

/** Policies consumed in one store call and what the store decided. */
interface Evaluation {
  readonly items: readonly PlannedItem[];
  decisions: RateLimitDecision[];
}

type MaybePromise<T> = T | Promise<T>;
const isPromise = <T>(value: MaybePromise<T> | unknown): value is Promise<T> =>
  typeof (value as { then?: unknown } | null)?.then === 'function';

const NOTHING: Evaluation = Object.freeze({ items: [], decisions: [] });

const merge = (a: Evaluation, b: Evaluation): Evaluation =>
  a.items.length === 0
    ? b
    : b.items.length === 0
      ? a
      : { items: [...a.items, ...b.items], decisions: [...a.decisions, ...b.decisions] };

/** Where the module stands with a request: decided, or left to the interceptor (after every guard). */
const REQUEST_STATE = Symbol('nestjs-rate-limit:request-state');
/** The client address of a request, once computed. */
const CLIENT_IP = Symbol('nestjs-rate-limit:client-ip');
/** The limiter that deferred a request, for the shared interceptor to complete it with. */
const REQUEST_LIMITER = Symbol('nestjs-rate-limit:limiter');
/** What the global guard decided before authentication, for the interceptor to complete. */
const EARLY_DECISIONS = Symbol('nestjs-rate-limit:early-decisions');
const DECIDED = 1;
const DEFERRED = 2;

/** Who asks for a decision: an explicit guard decides now; the global guard may defer to the interceptor. */
export type DecisionPoint = 'guard' | 'global-guard' | 'interceptor';

interface HttpRequest {
  user?: { id?: unknown; sub?: unknown } | null;
  raw?: IncomingMessage;
  headers?: Record<string, string | string[] | undefined>;
  [REQUEST_STATE]?: number;
  [EARLY_DECISIONS]?: Evaluation;
  [REQUEST_LIMITER]?: RateLimiter;
  [CLIENT_IP]?: string;
}

/**
 * The interceptor the limiter attaches to handlers whose user-keyed policies wait for the route's own guards.
 * One object for every application of the process (controller classes, and so their metadata, are shared):
 * it completes a request with the limiter that deferred it, and passes every other request straight on.
 */
const DEFERRED_DECISIONS: NestInterceptor = {
  intercept(ctx, next) {
    if (ctx.getType() !== 'http') return next.handle();
    const req = ctx.switchToHttp().getRequest<HttpRequest>();
    const limiter = req[REQUEST_LIMITER];
    if (req[REQUEST_STATE] !== DEFERRED || limiter === undefined) return next.handle();
    return from(limiter.handle(ctx, 'interceptor')).pipe(switchMap(() => next.handle()));
  },
};

/** Consecutive store failures that open the circuit breaker, and how often it then probes the store. */
const BREAKER_THRESHOLD = 5;
const BREAKER_PROBE_MS = 500;

const HEADER_SCHEMES: readonly RateLimitHeaders[] = ['ietf', 'legacy', 'both', 'none'];

function defaultUser(ctx: ExecutionContext): string | undefined {
  const user = ctx.switchToHttp().getRequest<HttpRequest>().user;
  const id = user?.id ?? user?.sub;
  return typeof id === 'string' || typeof id === 'number' || typeof id === 'bigint' ? String(id) : undefined;
}

function sameLimits(a: ResolvedPolicy, b: ResolvedPolicy): boolean {
  return a.algorithm === b.algorithm && a.limit === b.limit && a.windowMs === b.windowMs && a.capacity === b.capacity;
}

/**
 * The request side of the module: merges the policies of each handler (validated at start-up), resolves keys
 * and costs, makes one store call per request, applies fail modes and writes headers. The guard, the
 * interceptor and RateLimitService all go through it.
 */
@Injectable()
export class RateLimiter implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('RateLimit');
  /**
   * The plan of each route, by controller class then handler: a handler inherited from a base controller is
   * one function shared by its subclasses, each with its own class-level policies.
   */
  private readonly plans = new WeakMap<object, Map<object, RoutePlan>>();
  private readonly named = new Map<string, { policy: ResolvedPolicy; where: string }>();
  private readonly defaults: readonly PlannedPolicy[];
  private readonly trust: TrustFn;
  private readonly ipv6Prefix: number;
  private readonly timeoutMs: number;
  private readonly headers: RateLimitHeaders;
  private readonly failMode: FailMode;
  private readonly user: (ctx: ExecutionContext) => string | undefined;
  readonly reporter: FailureReporter;
  /** Where rate-limit policies live, and where quotas do (the same store unless `postgres` is set). */
  readonly store: RateLimitStore;
  readonly quotaStore: RateLimitStore;
  private readonly breakers = new Map<RateLimitStore, CircuitBreaker>();
  private readonly withLimits = new WeakMap<ResolvedPolicy, Map<number, ResolvedPolicy>>();
  /** Denials of a remote store, answered locally until they end (pointless for the in-process store). */
  readonly denyCache: DenyCache | undefined;
  private warnedForwardedFor = false;

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) readonly options: RateLimitModuleOptions,
    @Inject(RATE_LIMIT_STORES) stores: RateLimitStores,
    @Inject(RATE_LIMIT_CLOCK) private readonly clock: Clock,
    private readonly reflector: Reflector,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    const option = (name: string, problem: string, value: unknown): never => {
      throw new TypeError(`nestjs-rate-limit: option "${name}" ${problem}, got ${JSON.stringify(value)}`);
    };
    this.headers = options.headers ?? 'ietf';
    if (!HEADER_SCHEMES.includes(this.headers))
      option('headers', "must be 'ietf', 'legacy', 'both' or 'none'", this.headers);
    this.failMode = options.failMode ?? 'open';
    if (this.failMode !== 'open' && this.failMode !== 'closed')
      option('failMode', "must be 'open' or 'closed'", this.failMode);
    this.timeoutMs = options.timeout ?? 100;
    if (!Number.isSafeInteger(this.timeoutMs) || this.timeoutMs < 1)
      option('timeout', 'must be an integer >= 1 (ms)', this.timeoutMs);
    this.ipv6Prefix = options.ipv6Prefix ?? 64;
    if (!Number.isInteger(this.ipv6Prefix) || this.ipv6Prefix < 1 || this.ipv6Prefix > 128) {
      option('ipv6Prefix', 'must be an integer from 1 to 128', this.ipv6Prefix);
    }
    this.trust = compileTrust(options.trustProxy);
    if (isTrustAll(this.trust)) {
      this.logger.warn(
        'trustProxy is true: every X-Forwarded-For hop is believed, so any client can claim any address. ' +
          'Name your proxies instead (a hop count, CIDRs or "loopback").',
      );
    }
    this.user = options.user ?? defaultUser;
    this.reporter = new FailureReporter(this.logger, clock, options.onError);
    this.store = stores.rates;
    this.quotaStore = stores.quotas;
    this.denyCache = this.store instanceof MemoryRateLimitStore ? undefined : new DenyCache();
    this.defaults = (options.defaults ?? []).map((p) => this.plan(p, 'RateLimitModule defaults'));
    this.walkControllers();
  }

  /**
   * Validates every policy of every controller, so a bad one stops the application's start, and attaches the
   * limiter's interceptor to the handlers that need it: those with user-keyed policies and guards of their
   * own, where authentication may run after the global guard. Runs while Nest instantiates providers, which
   * is before it reads the handlers' interceptors to build its routes. Other routes pay for no interceptor.
   * The plans are stored here, named after the method's property name (a wrapped handler may have no name).
   * A handler inherited by several controllers is one function: the interceptor is attached to it once, for
   * all of them, and passes through the requests of those whose plan needs no deferral.
   */
  private walkControllers(): void {
    for (const { metatype } of this.discovery.getControllers()) {
      if (typeof metatype !== 'function') continue;
      const prototype = metatype.prototype as Record<string, unknown>;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[method];
        if (typeof handler !== 'function') continue;
        const plan = this.planFor(metatype, handler, method);
        if (!plan.deferred || this.options.global === false) continue;
        const interceptors = (Reflect.getMetadata(INTERCEPTORS_METADATA, handler) as unknown[] | undefined) ?? [];
        if (!interceptors.includes(DEFERRED_DECISIONS)) {
          Reflect.defineMetadata(INTERCEPTORS_METADATA, [...interceptors, DEFERRED_DECISIONS], handler);
        }
      }
    }
  }

  onModuleInit(): void {
    const quotas = [...this.named.values()].filter(({ policy }) => policy.quota !== undefined);
    if (quotas.length > 0 && this.options.postgres === undefined) {
      this.logger.warn(
        `Quota policies (${quotas.map(({ policy }) => policy.name).join(', ')}) are kept in the rate-limit store: ` +
          'not billing-grade (the memory store forgets them on restart; Redis keeps only the current period). ' +
          'Set the `postgres` option for durable, exact quota usage.',
      );
    }
  }

  onModuleDestroy(): void {
    for (const breaker of this.breakers.values()) breaker.dispose();
  }

  /** The circuit breaker of a store: each store fails, and recovers, on its own. */
  breakerFor(store: RateLimitStore): CircuitBreaker {
    let breaker = this.breakers.get(store);
    if (breaker === undefined) {
      breaker = new CircuitBreaker({
        timeoutMs: this.timeoutMs,
        threshold: BREAKER_THRESHOLD,
        probeIntervalMs: BREAKER_PROBE_MS,
        probe: store.ping === undefined ? undefined : () => (store.ping as () => Promise<unknown>).call(store),
        logger: this.logger,
      });
      this.breakers.set(store, breaker);
    }
    return breaker;
  }

  /** The store of a policy: quotas go to `quotaStore`. */
  storeOf(policy: ResolvedPolicy): RateLimitStore {
    return policy.quota !== undefined ? this.quotaStore : this.store;
  }

  /** A quota policy with this request's limit (the policy's limit is a function of the request). */
  withLimit(policy: ResolvedPolicy, limit: number): ResolvedPolicy {
    let byLimit = this.withLimits.get(policy);
    if (byLimit === undefined) this.withLimits.set(policy, (byLimit = new Map()));
    let variant = byLimit.get(limit);
    if (variant === undefined) {
      variant = Object.freeze({ ...policy, limit, capacity: limit });
      if (byLimit.size < 1000) byLimit.set(limit, variant);
    }
    return variant;
  }

  /**
   * Consumes items that may live in two stores (rate limits in Redis, quotas in PostgreSQL): the rate limits
   * first, then the quotas only if those allowed, and the rate limits refunded if a quota denies. So a
   * request denied by one kind consumes nothing of the other (between the calls a concurrent request may find
   * units taken: this can under-admit for a moment, never over-admit). Throws store failures.
   */
  async consumeAcross(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    const quotas = this.quotaStore === this.store ? [] : items.filter((i) => i.policy.quota !== undefined);
    if (quotas.length === 0) return this.breakerFor(this.store).run(() => this.store.consume(items));
    const rateItems = items.filter((i) => i.policy.quota === undefined);
    const rates = await this.breakerFor(this.store).run(() => this.store.consume(rateItems));
    const out = new Map<RateLimitStoreItem, RateLimitDecision>();
    rateItems.forEach((item, i) => out.set(item, rates[i]));
    if (rates.every((d) => d.allowed)) {
      const decided = await this.breakerFor(this.quotaStore).run(() => this.quotaStore.consume(quotas));
      quotas.forEach((item, i) => out.set(item, decided[i]));
      if (decided.some((d) => !d.allowed) && rateItems.length > 0) {
        const refunded = await this.breakerFor(this.store).run(() => this.store.refund(rateItems));
        rateItems.forEach((item, i) => out.set(item, { ...refunded[i], allowed: true, retryAfterMs: 0 }));
      }
    } else {
      const peeked = await this.breakerFor(this.quotaStore).run(() => this.quotaStore.peek(quotas));
      quotas.forEach((item, i) => out.set(item, { ...peeked[i], allowed: true, retryAfterMs: 0 }));
    }
    return items.map((item) => out.get(item) as RateLimitDecision);
  }

  /** Looks up a policy declared in `defaults` or any @RateLimit by its name. */
  policyNamed(name: string): ResolvedPolicy | undefined {
    return this.named.get(name)?.policy;
  }

  /**
   * Runs a store operation of RateLimitService, reporting failures: on the store of `policy` under its breaker
   * and timeout, or, without a policy, as given (consumeAcross runs its own breakers).
   */
  async call<T>(
    policies: readonly string[],
    operation: (store: RateLimitStore) => Promise<T>,
    policy?: ResolvedPolicy,
  ): Promise<T> {
    try {
      if (policy === undefined) return await operation(this.store);
      const store = this.storeOf(policy);
      return await this.breakerFor(store).run(() => operation(store));
    } catch (error) {
      this.reporter.report(error, policies);
      throw error;
    }
  }

  /** The module's clock. */
  now(): number {
    return this.clock.now();
  }

  /** True when there is nothing left to decide for this request (the interceptor's fast path). */
  isDecided(ctx: ExecutionContext): boolean {
    return ctx.getType() !== 'http' || ctx.switchToHttp().getRequest<HttpRequest>()[REQUEST_STATE] === DECIDED;
  }

  /**
   * Decides a request: returns when it may proceed, throws RateLimitExceededException (429) or
   * RateLimitUnavailableException (503). Decides each request once, however many guards ask.
   */
  async handle(ctx: ExecutionContext, point: DecisionPoint): Promise<void> {
    if (ctx.getType() !== 'http') return;
    const http = ctx.switchToHttp();
    const req = http.getRequest<HttpRequest>();
    const state = req[REQUEST_STATE];
    if (state === DECIDED || (state === DEFERRED && point !== 'interceptor')) return;
    const res = http.getResponse<object>();
    if (state === DEFERRED) {
      req[REQUEST_STATE] = DECIDED;
      const plan = this.planFor(ctx.getClass(), ctx.getHandler());
      const early = req[EARLY_DECISIONS] ?? NOTHING;
      const late = await this.evaluate(ctx, req, res, plan.late, early);
      if (late.decisions.some((d) => !d.allowed)) await this.compensate(early);
      this.conclude(res, [early, late], plan);
      return;
    }
    const plan = this.planFor(ctx.getClass(), ctx.getHandler());
    if (plan.policies.length === 0) {
      req[REQUEST_STATE] = DECIDED;
      return;
    }
    // Global guards run before controller and handler guards: when a user-keyed policy sees no user yet,
    // authentication may still be ahead. The other policies are decided now (so requests your authentication
    // rejects still count against the IP), the user-keyed ones by the interceptor, after every guard.
    if (point === 'global-guard' && plan.deferred && this.user(ctx) === undefined) {
      req[REQUEST_STATE] = DEFERRED;
      req[REQUEST_LIMITER] = this;
      const early = await this.evaluate(ctx, req, res, plan.early, NOTHING);
      if (early.decisions.some((d) => !d.allowed)) {
        req[REQUEST_STATE] = DECIDED;
        this.conclude(res, [early]);
      }
      req[EARLY_DECISIONS] = early;
      return;
    }
    req[REQUEST_STATE] = DECIDED;
    this.conclude(res, [await this.evaluate(ctx, req, res, plan.policies, NOTHING)]);
  }

  /**
   * Resolves the keys and costs of `policies` and consumes them in one store call. Applies the fail modes:
   * throws 503 when a fail-closed policy cannot be decided (after giving back what `before` consumed).
   */
  private async evaluate(
    ctx: ExecutionContext,
    req: HttpRequest,
    res: object,
    policies: readonly PlannedPolicy[],
    before: Evaluation,
  ): Promise<Evaluation> {
    const items: PlannedItem[] = [];
    let failed: { planned: PlannedPolicy; error: unknown }[] | undefined;
    for (const planned of policies) {
      try {
        let key = this.identity(planned, ctx, req);
        if (isPromise(key)) key = await key;
        if (key === undefined) continue;
        let cost = this.cost(planned, ctx);
        if (isPromise(cost)) cost = await cost;
        let policy = planned.policy;
        if (planned.limit !== undefined) {
          let limit = this.quotaLimit(planned, ctx);
          if (isPromise(limit)) limit = await limit;
          policy = this.withLimit(policy, limit);
        }
        items.push({ policy, key, cost, planned });
      } catch (error) {
        (failed ??= []).push({ planned, error });
      }
    }
    if (failed !== undefined) {
      for (const { planned, error } of failed) this.reporter.report(error, [planned.policy.name]);
      const closed = failed.find((f) => f.planned.failMode === 'closed');
      if (closed !== undefined) await this.unavailable(res, closed.planned, before);
    }
    if (items.length === 0) return NOTHING;
    const quotas = this.quotaStore === this.store ? [] : items.filter((i) => i.policy.quota !== undefined);
    if (quotas.length === 0) return this.consumeOn(this.store, items, res, before);
    // Rate limits and quotas in two stores: the quotas only when the rate limits allow, refunded otherwise.
    const rates = await this.consumeOn(
      this.store,
      items.filter((i) => i.policy.quota === undefined),
      res,
      before,
    );
    if (rates.decisions.some((d) => !d.allowed)) return rates;
    const quota = await this.consumeOn(this.quotaStore, quotas, res, merge(before, rates));
    if (quota.decisions.some((d) => !d.allowed)) await this.compensate(rates);
    return merge(rates, quota);
  }

  /** One store call for `items`, through the store's breaker and the deny cache; applies the fail modes. */
  private async consumeOn(
    store: RateLimitStore,
    items: readonly PlannedItem[],
    res: object,
    before: Evaluation,
  ): Promise<Evaluation> {
    if (items.length === 0) return NOTHING;
    // Quota denials last until the end of the period, and a plan change must lift them: never cached.
    const cache = store === this.store ? this.denyCache : undefined;
    const nowMs = cache === undefined ? 0 : this.clock.now();
    if (cache !== undefined) {
      for (const item of items) {
        if (item.policy.quota !== undefined) continue;
        const denied = cache.check(item.policy, item.key, item.cost, nowMs);
        if (denied !== undefined) return { items: [item], decisions: [denied] };
      }
    }
    try {
      // The in-process store answers synchronously and cannot hang: no timer, no breaker on its path.
      const decisions =
        store instanceof MemoryRateLimitStore
          ? await store.consume(items)
          : await this.breakerFor(store).run(() => store.consume(items));
      if (cache !== undefined) {
        decisions.forEach((d, i) => {
          if (!d.allowed && items[i].policy.quota === undefined) {
            cache.remember(items[i].policy, items[i].key, items[i].cost, d, nowMs);
          }
        });
      }
      return { items, decisions };
    } catch (error) {
      this.reporter.report(
        error,
        items.map((i) => i.policy.name),
      );
      const failClosed = items.find((i) => i.planned.failMode === 'closed');
      if (failClosed !== undefined) await this.unavailable(res, failClosed.planned, before);
      return NOTHING;
    }
  }

  /** Writes the headers of every decision of the request; throws 429 when one of them denies. */
  private conclude(res: object, evaluations: readonly Evaluation[], plan?: RoutePlan): void {
    let pairs = evaluations.flatMap((e) => e.items.map((item, i) => [item, e.decisions[i]] as const));
    // Headers list policies in the route's order, also when the guard and the interceptor each decided some.
    if (plan !== undefined)
      pairs = pairs.sort(([a], [b]) => plan.policies.indexOf(a.planned) - plan.policies.indexOf(b.planned));
    const policies = pairs.map(([item]) => item.policy);
    const decisions = pairs.map(([, decision]) => decision);
    this.setHeaders(res, rateLimitHeaders(this.headers, policies, decisions));
    const denied = decisions.filter((d) => !d.allowed);
    if (denied.length === 0) return;
    const worst = mostRestrictive(denied);
    if (Number.isFinite(worst.retryAfterMs)) {
      this.setHeaders(res, [['Retry-After', String(Math.max(1, toSeconds(worst.retryAfterMs)))]]);
    }
    throw new RateLimitExceededException(worst);
  }

  /**
   * Gives back what the guard consumed when the interceptor's policies deny, so the request consumes nothing.
   * Between the two calls a concurrent request may find those units taken: that can under-admit, never
   * over-admit. If the refund fails, the units stay taken until they expire.
   */
  private async compensate(early: Evaluation): Promise<void> {
    if (early.items.length === 0 || !early.decisions.every((d) => d.allowed)) return;
    try {
      const decisions = [...early.decisions];
      for (const store of new Set(early.items.map((i) => this.storeOf(i.policy)))) {
        const part = early.items.filter((i) => this.storeOf(i.policy) === store);
        const refunded = await this.breakerFor(store).run(() => store.refund(part));
        part.forEach((item, j) => {
          decisions[early.items.indexOf(item)] = { ...refunded[j], allowed: true, retryAfterMs: 0 };
        });
      }
      early.decisions = decisions;
    } catch (error) {
      this.reporter.report(
        error,
        early.items.map((i) => i.policy.name),
      );
    }
  }

  private async unavailable(res: object, planned: PlannedPolicy, before: Evaluation): Promise<never> {
    await this.compensate(before);
    const retryAfter = Math.max(1, toSeconds(this.timeoutMs));
    this.setHeaders(res, [['Retry-After', String(retryAfter)]]);
    throw new RateLimitUnavailableException(planned.policy.name, retryAfter);
  }

  private setHeaders(res: object, headers: readonly [string, string][]): void {
    const adapter = this.adapterHost.httpAdapter;
    for (const [name, value] of headers) adapter.setHeader(res, name, value);
  }

  /** The identity of a policy for this request; a Promise only when a key function returns one. */
  private identity(planned: PlannedPolicy, ctx: ExecutionContext, req: HttpRequest): MaybePromise<string | undefined> {
    const { key } = planned;
    if (key === 'ip') return `ip:${this.clientIp(req)}`;
    if (key === 'user') {
      const user = this.user(ctx);
      return user === undefined ? `ip:${this.clientIp(req)}` : `user:${user}`;
    }
    const value = key(ctx);
    return isPromise(value) ? value.then((v) => this.checkIdentity(planned, v)) : this.checkIdentity(planned, value);
  }

  private checkIdentity(planned: PlannedPolicy, value: unknown): string | undefined {
    if (value === undefined || typeof value === 'string') return value;
    throw new RateLimitPolicyError(`key function returned ${typeof value}; it must return a string or undefined`, {
      policy: planned.policy.name,
      field: 'key',
      where: planned.where,
    });
  }

  /** A quota's limit for this request; a Promise only when the limit function returns one. */
  private quotaLimit(planned: PlannedPolicy, ctx: ExecutionContext): MaybePromise<number> {
    const value: unknown = (planned.limit as (ctx: ExecutionContext) => unknown)(ctx);
    const check = (v: unknown): number =>
      checkQuotaLimit(v, (problem) => {
        throw new RateLimitPolicyError(`the limit function returned a bad value: ${problem}`, {
          policy: planned.policy.name,
          field: 'limit',
          where: planned.where,
        });
      });
    return isPromise(value) ? value.then(check) : check(value);
  }

  /** The cost of a policy for this request; a Promise only when a cost function returns one. */
  private cost(planned: PlannedPolicy, ctx: ExecutionContext): MaybePromise<number> {
    const { cost } = planned;
    if (cost === undefined) return 1;
    if (typeof cost === 'number') return cost;
    const value: unknown = cost(ctx);
    return isPromise(value) ? value.then((v) => this.checkCost(planned, v)) : this.checkCost(planned, value);
  }

  private checkCost(planned: PlannedPolicy, value: unknown): number {
    return checkCost(value, (problem) => {
      throw new RateLimitPolicyError(`the cost function returned a bad value: ${problem}`, {
        policy: planned.policy.name,
        field: 'cost',
        where: planned.where,
      });
    });
  }

  /** The client's address, computed once per request (several policies may be keyed by it). */
  private clientIp(req: HttpRequest): string {
    const known = req[CLIENT_IP];
    if (known !== undefined) return known;
    const raw = req.raw ?? (req as unknown as IncomingMessage);
    if (isTrustNone(this.trust) && !this.warnedForwardedFor && raw.headers?.['x-forwarded-for'] !== undefined) {
      this.warnedForwardedFor = true;
      this.logger.warn(
        'A request carried X-Forwarded-For but trustProxy is off, so clients are keyed by the socket address. ' +
          'Behind a proxy, set trustProxy to it (a hop count, CIDRs or "loopback").',
      );
    }
    return (req[CLIENT_IP] = clientIp(raw, this.trust, this.ipv6Prefix));
  }

  /**
   * The plan of a route, computed once per controller class and handler. Every controller's plans are
   * computed at start-up by walkControllers, which knows the method's name; a handler not seen there is
   * named by its function's name.
   */
  private planFor(controller: object, handler: object, method?: string): RoutePlan {
    let byHandler = this.plans.get(controller);
    let plan = byHandler?.get(handler);
    if (plan !== undefined) return plan;
    const name = (target: object, fallback: string): string => (target as { name?: string }).name || fallback;
    const where = `${name(controller, 'controller')}.${method ?? name(handler, 'handler')}`;
    const classSkip = this.reflector.get<true | string[] | undefined>(RATE_LIMIT_SKIP, controller as never);
    const handlerSkip = this.reflector.get<true | string[] | undefined>(RATE_LIMIT_SKIP, handler as never);
    const byName = new Map<string, PlannedPolicy>();
    for (const planned of this.defaults) byName.set(planned.policy.name, planned);
    for (const target of [controller, handler]) {
      const declared = this.reflector.get<RateLimitPolicy[] | undefined>(RATE_LIMIT_POLICIES, target as never) ?? [];
      const seen = new Set<string>();
      for (const policy of declared) {
        const planned = this.plan(policy, where);
        if (seen.has(planned.policy.name)) {
          throw new RateLimitPolicyError('is declared twice on the same target; names must be unique per route', {
            policy: planned.policy.name,
            field: 'name',
            where,
          });
        }
        seen.add(planned.policy.name);
        byName.set(planned.policy.name, planned);
      }
    }
    if (classSkip === true || handlerSkip === true) byName.clear();
    for (const name of [
      ...(Array.isArray(classSkip) ? classSkip : []),
      ...(Array.isArray(handlerSkip) ? handlerSkip : []),
    ]) {
      byName.delete(name);
    }
    const policies = [...byName.values()];
    const late = policies.filter((p) => p.key === 'user');
    const routeGuards = [controller, handler].some(
      (target) => (this.reflector.get<unknown[] | undefined>(GUARDS_METADATA, target as never)?.length ?? 0) > 0,
    );
    plan = {
      policies,
      early: policies.filter((p) => p.key !== 'user'),
      late,
      deferred: late.length > 0 && routeGuards,
    };
    if (byHandler === undefined) this.plans.set(controller, (byHandler = new Map()));
    byHandler.set(handler, plan);
    return plan;
  }

  private plan(policy: RateLimitPolicy, where: string): PlannedPolicy {
    let resolved = validatePolicy(policy, where);
    const known = this.named.get(resolved.name);
    if (known === undefined) {
      this.named.set(resolved.name, { policy: resolved, where });
    } else if (!sameLimits(known.policy, resolved)) {
      // The same name with other limits replaces the earlier policy on this route; it keeps its own state.
      const { algorithm, limit, windowMs, capacity } = resolved;
      resolved = Object.freeze({ ...resolved, id: `${resolved.name}~${algorithm}-${limit}-${windowMs}-${capacity}` });
    }
    return {
      policy: resolved,
      limit: policy.algorithm === 'quota' && typeof policy.limit === 'function' ? policy.limit : undefined,
      key: policy.key ?? 'user',
      cost: policy.cost,
      failMode: policy.failMode ?? this.failMode,
      where,
    };
  }
}
