// Type tests of the public API: what users write, type-checked by `npm run lint` (tsc over test/), never run.
// Each `@ts-expect-error` is a line that must not compile; a wrong expectation fails the lint. The package is
// imported by name, as users do (tsconfig's `paths` point the names at the sources).
import { type DynamicModule, type ExecutionContext, Injectable } from '@nestjs/common';
import { expectTypeOf } from 'expect-type';
import {
  type Clock,
  Criticality,
  MemoryRateLimitStore,
  type RateLimitDecision,
  type RateLimitDecisionSource,
  type RateLimitDecisionEvent,
  type RateLimitDuration,
  type RateLimitErrorBody,
  RateLimitExceededException,
  type RateLimitIdentities,
  type RateLimitKey,
  RateLimit,
  RateLimitModule,
  type RateLimitModuleAsyncOptions,
  type RateLimitModuleOptions,
  type RateLimitModuleOptionsFactory,
  RateLimitOverloadedException,
  type RateLimitOverride,
  type RateLimitOverrideChange,
  type RateLimitOverrideOutcome,
  type RateLimitPolicy,
  type RateLimitProblem,
  type RateLimitReservation,
  RateLimitService,
  type RateLimitSheddingOptions,
  RateLimitStore,
  type RateLimitStoreItem,
  RateLimitUnavailableException,
  type ResolvedPolicy,
  validatePolicy,
} from 'nest-rate-limit';
import { RateLimitGraphQLError, type RateLimitGraphQLExtensions } from 'nest-rate-limit/graphql';
import {
  RateLimitDroppedEvent,
  type RpcDenyListError,
  type RpcRateLimitedError,
  type RpcUnavailableError,
} from 'nest-rate-limit/microservices';
import { FAKE_CLOCK_START, FakeClock, RateLimitTestingModule } from 'nest-rate-limit/testing';
import type {
  WsDenyListError,
  WsOverloadedError,
  WsRateLimitedError,
  WsUnavailableError,
} from 'nest-rate-limit/websockets';

declare const ctx: ExecutionContext;

// --- RateLimitModule.forRoot ---------------------------------------------------------------------------------

expectTypeOf(
  RateLimitModule.forRoot({
    redis: { url: 'redis://localhost:6379' },
    defaults: [{ algorithm: 'sliding-window-counter', limit: 600, window: '1m' }],
    headers: 'both',
    errors: 'problem',
    failMode: 'open',
    trustProxy: 1,
    onDecision: (event) => expectTypeOf(event).toEqualTypeOf<RateLimitDecisionEvent>(),
    onError: (error, policy) => expectTypeOf<[Error, string]>([error, policy]),
  }),
).toEqualTypeOf<DynamicModule>();
expectTypeOf(RateLimitModule.forRoot).parameter(0).toExtend<RateLimitModuleOptions>();
// @ts-expect-error an unknown header format
RateLimitModule.forRoot({ headers: 'draft-7' });
// @ts-expect-error a misspelt option
RateLimitModule.forRoot({ redisUrl: 'redis://localhost:6379' });

// --- RateLimitModule.forRootAsync ----------------------------------------------------------------------------

class ConfigService {
  get(name: string): string {
    return name;
  }
}
const fromFactory: RateLimitModuleAsyncOptions = {
  inject: [ConfigService],
  useFactory: (config: ConfigService) => ({ redis: { url: config.get('REDIS_URL') } }),
};
expectTypeOf(RateLimitModule.forRootAsync(fromFactory)).toEqualTypeOf<DynamicModule>();
expectTypeOf<RateLimitModuleAsyncOptions>().toExtend<Parameters<typeof RateLimitModule.forRootAsync>[0]>();

@Injectable()
class RateLimitConfig implements RateLimitModuleOptionsFactory {
  create(): RateLimitModuleOptions {
    return { keyPrefix: 'app:' };
  }
}
RateLimitModule.forRootAsync({ useClass: RateLimitConfig });
RateLimitModule.forRootAsync({ useExisting: RateLimitConfig });
RateLimitModule.forRootAsync({ useFactory: async () => ({ mode: 'shadow' as const }) });
RateLimitModule.forRoot({ redis: { url: 'redis://localhost:6379' }, failMode: 'local', instances: 4 });
// @ts-expect-error instances is a number
RateLimitModule.forRoot({ failMode: 'local', instances: '4' });
RateLimitModule.forRoot({ redis: { url: 'redis://localhost:6379' }, identitySecret: process.env.RATE_LIMIT_SECRET });
RateLimitModule.forRoot({ readableKeys: true });
// @ts-expect-error readableKeys is a boolean
RateLimitModule.forRoot({ readableKeys: 'yes' });
// @ts-expect-error an unknown fail mode
RateLimitModule.forRoot({ failMode: 'degraded' });
// @ts-expect-error a factory whose options are wrong
RateLimitModule.forRootAsync({ useFactory: () => ({ headers: 'draft-7' }) });
// @ts-expect-error a class without create()
RateLimitModule.forRootAsync({ useClass: ConfigService });

// --- @RateLimit policies --------------------------------------------------------------------------------------

expectTypeOf<'10s'>().toExtend<RateLimitDuration>();
expectTypeOf<'1 minute'>().not.toExtend<RateLimitDuration>();
RateLimit({ algorithm: 'sliding-window-log', limit: 5, window: '10s', key: 'ip', failMode: 'closed' });
RateLimit({ algorithm: 'gcra', limit: 100, window: 60_000, burst: 20, cost: () => 2, block: '15m' });
RateLimit([
  { name: 'per-plan', algorithm: 'token-bucket', limit: async (c) => (c.getType() === 'http' ? 10 : 5), window: '1h' },
  { name: 'ai-monthly', algorithm: 'quota', period: 'month', timeZone: 'Europe/Paris', limit: 1000 },
  { name: 'in-flight', algorithm: 'concurrency', limit: 2, window: '5m', count: 'failed' },
]);
RateLimit({ algorithm: 'sliding-window-counter', limit: 600, window: '1m', failMode: 'local', localLimit: 200 });
RateLimit({ algorithm: 'quota', period: 'day', limit: 1000, failMode: 'local', localLimit: 100 });
// @ts-expect-error localLimit is a number, not a function of the request
RateLimit({ algorithm: 'gcra', limit: (c) => (c.getType() === 'http' ? 10 : 5), window: '1m', localLimit: () => 2 });
// @ts-expect-error a window that is not a RateLimitDuration
RateLimit({ algorithm: 'fixed-window', limit: 10, window: '1 minute' });
// @ts-expect-error an unknown algorithm
RateLimit({ algorithm: 'leaky-bucket', limit: 10, window: '1m' });
// @ts-expect-error a quota has a period, not a window
RateLimit({ algorithm: 'quota', limit: 10, window: '1d' });
// @ts-expect-error a quota without its period
RateLimit({ algorithm: 'quota', limit: 10 });
expectTypeOf(RateLimit).returns.toEqualTypeOf<ClassDecorator & MethodDecorator>();

// --- Key functions -------------------------------------------------------------------------------------------

type KeyFunction = Extract<RateLimitKey, (...args: never[]) => unknown>;
expectTypeOf<KeyFunction>().parameters.toEqualTypeOf<[ExecutionContext, RateLimitIdentities]>();
expectTypeOf<KeyFunction>().returns.toEqualTypeOf<string | undefined | Promise<string | undefined>>();
expectTypeOf<RateLimitIdentities>().toEqualTypeOf<{
  readonly ip: string | undefined;
  readonly user: string | undefined;
}>();
const byRoute: RateLimitPolicy = {
  algorithm: 'fixed-window',
  limit: 10,
  window: '1m',
  key: (c, id) => `${id.ip ?? 'unknown'}:${c.getClass().name}`,
};
RateLimit(byRoute);
// @ts-expect-error a key function returns a string (or undefined to skip), not a number
RateLimit({ algorithm: 'fixed-window', limit: 10, window: '1m', key: () => 42 });

// --- RateLimitService ----------------------------------------------------------------------------------------

declare const service: RateLimitService;
expectTypeOf(service.consume).parameters.toEqualTypeOf<
  [policy: RateLimitPolicy | string, key: string, opts?: { cost?: number }]
>();
expectTypeOf(service.consume).returns.toEqualTypeOf<Promise<RateLimitDecision>>();
expectTypeOf(service.consumeMany)
  .parameter(0)
  .toEqualTypeOf<readonly { policy: RateLimitPolicy | string; key: string; cost?: number }[]>();
expectTypeOf(service.reserve).parameters.toEqualTypeOf<
  [items: readonly { policy: RateLimitPolicy | string; key: string; cost?: number }[], opts?: { signal?: AbortSignal }]
>();
expectTypeOf(service.reserve).returns.resolves.toEqualTypeOf<RateLimitReservation>();
expectTypeOf<RateLimitReservation['settle']>().parameter(0).toEqualTypeOf<number | readonly number[]>();
expectTypeOf<RateLimitReservation['settle']>().returns.toEqualTypeOf<Promise<readonly RateLimitDecision[]>>();
expectTypeOf<RateLimitReservation['cancel']>().returns.toEqualTypeOf<Promise<void>>();
expectTypeOf(service.consumeMany).returns.toEqualTypeOf<Promise<RateLimitDecision[]>>();
expectTypeOf(service.peek).returns.toEqualTypeOf<Promise<RateLimitDecision>>();
expectTypeOf(service.refund).parameters.toEqualTypeOf<
  [policy: RateLimitPolicy | string, key: string, amount: number]
>();
expectTypeOf(service.reset).returns.toEqualTypeOf<Promise<void>>();
expectTypeOf(service.resetAll).returns.toEqualTypeOf<Promise<number>>();
expectTypeOf(service.block).parameters.toEqualTypeOf<
  [policy: RateLimitPolicy | string, key: string, durationMs: number]
>();
expectTypeOf(service.override).parameters.toEqualTypeOf<
  [policy: string, identity: string, change: RateLimitOverrideChange]
>();
expectTypeOf<RateLimitOverrideChange>().toEqualTypeOf<{
  limit?: number;
  burst?: number;
  ttl?: number | string;
  reason?: string;
  shadow?: boolean;
}>();
expectTypeOf(service.override).returns.toEqualTypeOf<Promise<RateLimitOverride>>();
expectTypeOf<RateLimitOverride>().toEqualTypeOf<{
  readonly policy: string;
  readonly identity: string;
  readonly limit: number | undefined;
  readonly burst: number | undefined;
  readonly until: Date | undefined;
  readonly reason: string | undefined;
  readonly shadow: boolean;
  readonly setAt: Date;
}>();
expectTypeOf(service.removeOverride).parameters.toEqualTypeOf<[policy: string, identity: string]>();
expectTypeOf(service.removeOverride).returns.toEqualTypeOf<Promise<boolean>>();
expectTypeOf(service.overrides).parameters.toEqualTypeOf<[policy?: string]>();
expectTypeOf(service.overrides).returns.toEqualTypeOf<Promise<RateLimitOverride[]>>();
expectTypeOf(service.acquire).parameter(2).toEqualTypeOf<{
  cost?: number;
  maxWaitMs: number;
  signal?: AbortSignal;
  fairKey?: string;
  weight?: number;
}>();
expectTypeOf(service.usage).returns.resolves.toEqualTypeOf<{
  used: number;
  limit: number | undefined;
  periodStart: Date;
  periodEnd: Date;
}>();
// @ts-expect-error the cost goes in the options
void service.consume('api', 'user:1', 3);

// --- Decisions and errors ------------------------------------------------------------------------------------

expectTypeOf<RateLimitDecision>().toEqualTypeOf<{
  allowed: boolean;
  policy: string;
  limit: number;
  remaining: number;
  resetMs: number;
  retryAfterMs: number;
  message?: string;
  blocked?: boolean;
  granted?: number;
}>();
declare const decision: RateLimitDecision;
expectTypeOf(new RateLimitExceededException(decision).problem()).toEqualTypeOf<RateLimitProblem>();
expectTypeOf(new RateLimitUnavailableException('login', 1).problem()).toEqualTypeOf<RateLimitProblem>();
expectTypeOf<RateLimitProblem['status']>().toEqualTypeOf<429 | 503>();
expectTypeOf<RateLimitProblem['violated-policies']>().toEqualTypeOf<readonly string[]>();
// The body of a 429, 503 or 403 as a client parses it: `code` narrows it to one refusal and its fields.
declare const body: RateLimitErrorBody;
expectTypeOf(body.code).toEqualTypeOf<
  'RATE_LIMITED' | 'RATE_LIMIT_UNAVAILABLE' | 'OVERLOADED' | 'RATE_LIMIT_DENY_LIST'
>();
expectTypeOf(body.statusCode).toEqualTypeOf<429 | 503 | 403>();
if (body.code === 'RATE_LIMITED') {
  expectTypeOf(body).toEqualTypeOf<{
    readonly statusCode: 429;
    readonly error: 'Too Many Requests';
    readonly code: 'RATE_LIMITED';
    readonly message: string;
    readonly policy: string;
    readonly retryAfter?: number;
  }>();
}
if (body.code === 'RATE_LIMIT_UNAVAILABLE') {
  expectTypeOf(body.retryAfter).toEqualTypeOf<number>();
  expectTypeOf(body.policy).toEqualTypeOf<string>();
  expectTypeOf(body.error).toEqualTypeOf<'Service Unavailable'>();
}
if (body.code === 'OVERLOADED') {
  expectTypeOf(body).toEqualTypeOf<{
    readonly statusCode: 503;
    readonly error: 'Service Unavailable';
    readonly code: 'OVERLOADED';
    readonly message: string;
    readonly criticality: 'critical' | 'default' | 'sheddable';
    readonly retryAfter: number;
  }>();
  // @ts-expect-error load shedding names no policy
  void body.policy;
}
if (body.statusCode === 403) {
  expectTypeOf(body).toEqualTypeOf<{
    readonly statusCode: 403;
    readonly error: 'Forbidden';
    readonly code: 'RATE_LIMIT_DENY_LIST';
    readonly message: string;
  }>();
  // @ts-expect-error a deny list's refusal names no policy and has no retryAfter
  void body.policy;
}
expectTypeOf<RateLimitDecisionEvent>().toEqualTypeOf<{
  readonly policy: string;
  readonly key: string;
  readonly allowed: boolean;
  readonly shadow: boolean;
  readonly blocked: boolean;
  readonly cost: number;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly context: ExecutionContext | undefined;
  readonly skipped: boolean;
  readonly source: 'store' | 'deny-cache' | 'lease' | 'local' | 'fail-open' | 'fail-closed' | 'shed';
  readonly override?: RateLimitOverrideOutcome;
  readonly criticality?: 'critical' | 'default' | 'sheddable';
}>();
expectTypeOf<RateLimitOverrideOutcome>().toEqualTypeOf<{
  readonly shadow: boolean;
  readonly limit: number;
  readonly allowed: boolean;
}>();
expectTypeOf<RateLimitDecisionEvent['source']>().toEqualTypeOf<RateLimitDecisionSource>();

// --- A custom store ------------------------------------------------------------------------------------------

/** The least a custom store writes: consume, peek, refund and reset over items. */
class TieredStore implements RateLimitStore {
  constructor(private readonly inner: RateLimitStore) {}
  consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return this.inner.consume(items);
  }
  peek(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<RateLimitDecision[]> {
    return this.inner.peek(items);
  }
  refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return this.inner.refund(items);
  }
  reset(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    return this.inner.reset(items);
  }
}
RateLimitModule.forRoot({ store: new TieredStore(new MemoryRateLimitStore({ maxKeys: 10_000 })) });
expectTypeOf<RateLimitStoreItem>().toEqualTypeOf<{
  readonly policy: ResolvedPolicy;
  readonly key: string;
  readonly cost: number;
  readonly shadow?: boolean;
}>();
// The contract, whole: four operations and six optional ones. What the module's own stores tell the engine
// beyond it (in-process, leases, the feed of changes, consume timing) is no part of it.
expectTypeOf<keyof RateLimitStore>().toEqualTypeOf<
  'consume' | 'peek' | 'refund' | 'reset' | 'charge' | 'block' | 'unblock' | 'resetAll' | 'ping' | 'close'
>();
expectTypeOf<RateLimitStore['consume']>().parameters.toEqualTypeOf<[readonly RateLimitStoreItem[]]>();
expectTypeOf(validatePolicy).returns.toEqualTypeOf<ResolvedPolicy>();
// The DI token of the module's store is the interface's name.
expectTypeOf(RateLimitStore).toBeSymbol();
// @ts-expect-error a store without refund
const incomplete: RateLimitStore = { consume: async () => [], peek: async () => [], reset: async () => {} };

// --- nest-rate-limit/testing ---------------------------------------------------------------------------------

expectTypeOf(RateLimitTestingModule.forRoot()).toEqualTypeOf<DynamicModule>();
expectTypeOf(RateLimitTestingModule.forRoot).parameter(0).toEqualTypeOf<RateLimitModuleOptions | undefined>();
expectTypeOf(new FakeClock().advance(60_000)).toEqualTypeOf<FakeClock>();
expectTypeOf<FakeClock>().toExtend<Clock>();
expectTypeOf(FAKE_CLOCK_START).toBeNumber();

// --- nest-rate-limit/graphql, /websockets, /microservices ----------------------------------------------------

declare const formattedError: unknown;
if (formattedError instanceof RateLimitGraphQLError) {
  expectTypeOf(formattedError).toExtend<Error>();
  expectTypeOf(formattedError.extensions).toEqualTypeOf<RateLimitGraphQLExtensions>();
  if (formattedError.extensions.code === 'RATE_LIMIT_UNAVAILABLE') {
    expectTypeOf(formattedError.extensions.retryAfter).toBeNumber();
  }
  // @ts-expect-error a deny-list error names no policy
  if (formattedError.extensions.code === 'RATE_LIMIT_DENY_LIST') void formattedError.extensions.policy;
}

type WsError = WsRateLimitedError | WsUnavailableError | WsDenyListError;
declare const wsError: WsError;
expectTypeOf(wsError.status).toEqualTypeOf<'error'>();
if (wsError.code === 'RATE_LIMITED') expectTypeOf(wsError.retryAfter).toEqualTypeOf<number | undefined>();
expectTypeOf<WsRateLimitedError>().toEqualTypeOf<{
  readonly status: 'error';
  readonly code: 'RATE_LIMITED';
  readonly message: string;
  readonly policy: string;
  readonly retryAfter?: number;
}>();

type RpcError = RpcRateLimitedError | RpcUnavailableError | RpcDenyListError;
declare const rpcError: RpcError;
expectTypeOf(rpcError.code).toEqualTypeOf<'RATE_LIMITED' | 'RATE_LIMIT_UNAVAILABLE' | 'RATE_LIMIT_DENY_LIST'>();
if (rpcError.code === 'RATE_LIMIT_UNAVAILABLE') expectTypeOf(rpcError.retryAfter).toBeNumber();
expectTypeOf(new RateLimitDroppedEvent('events')).toExtend<Error>();
expectTypeOf<RateLimitDroppedEvent['policy']>().toEqualTypeOf<string | undefined>();

export { ctx, incomplete };

// Load shedding: @Criticality's levels, the `shedding` option, and what a shed client receives.
expectTypeOf(Criticality).parameter(0).toEqualTypeOf<'critical' | 'default' | 'sheddable'>();
expectTypeOf<Criticality>().toEqualTypeOf<'critical' | 'default' | 'sheddable'>();
expectTypeOf<RateLimitModuleOptions['shedding']>().toEqualTypeOf<boolean | RateLimitSheddingOptions | undefined>();
expectTypeOf<RateLimitSheddingOptions>().toEqualTypeOf<{
  minLimit?: number;
  maxLimit?: number;
  initialLimit?: number;
  reserve?: number;
  maxEventLoopDelay?: number | string;
}>();
expectTypeOf(new RateLimitOverloadedException('sheddable', 1).problem()).toEqualTypeOf<RateLimitProblem>();
expectTypeOf<WsOverloadedError>().toEqualTypeOf<{
  readonly status: 'error';
  readonly code: 'OVERLOADED';
  readonly message: string;
  readonly criticality: Criticality;
  readonly retryAfter: number;
}>();
