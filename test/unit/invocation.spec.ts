import { type CanActivate, Controller, type ExecutionContext, Get, UseGuards } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { Test, type TestingModule } from '@nestjs/testing';

import { RateLimit, type RateLimitPolicy, RateLimitService } from '../../lib/index.js';
import {
  type Decider,
  Invocation,
  invocationOf,
  InvocationStateError,
  type InvocationState,
  type OutcomeWatch,
  type SettlementWatch,
} from '../../lib/limiter/invocation.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { RateLimitTestingModule } from '../../lib/testing/index.js';

class BooksController {
  list(): string {
    return 'ok';
  }
}

const ctx = new ExecutionContextHost([{}, {}], BooksController, BooksController.prototype.list);
const limiter: Decider = { handle: () => Promise.resolve() };
const early = { items: [], decisions: [] };
const outcome: OutcomeWatch = { threw() {}, completed() {}, abandoned() {} };
const settlement: SettlementWatch = { threw() {}, completed() {}, abandoned() {} };

/** A record brought to `state` through legal transitions only. */
function recordIn(state: InvocationState): Invocation {
  const invocation = Invocation.of({}, ctx);
  if (state === 'deferred') invocation.defer(limiter, early);
  if (state === 'decided') invocation.decide();
  return invocation;
}

/** The operations that change the record, each as the guard or the interceptor calls it. */
const OPERATIONS = {
  'decide()': (invocation: Invocation) => invocation.decide(),
  'defer()': (invocation: Invocation) => invocation.defer(limiter, early),
  'decideLate()': (invocation: Invocation) => invocation.decideLate(),
  'watchOutcome()': (invocation: Invocation) => invocation.watchOutcome(outcome),
  'settleWith()': (invocation: Invocation) => invocation.settleWith(settlement),
} as const;
type Operation = keyof typeof OPERATIONS;

/** Every operation in every state: the state it leads to, or the rule whose breach it throws. */
const TRANSITIONS: [InvocationState, Operation, InvocationState | RegExp][] = [
  ['new', 'decide()', 'decided'],
  ['new', 'defer()', 'deferred'],
  ['new', 'decideLate()', /decideLate\(\) on an invocation of BooksController.list that is new: only a deferred/],
  ['new', 'watchOutcome()', /watchOutcome\(\) on .* that is new: nothing of it has been charged/],
  ['new', 'settleWith()', /settleWith\(\) on .* that is new: nothing of it has been charged/],
  ['deferred', 'decide()', /decide\(\) on .* that is deferred: an invocation is decided, and charged, once/],
  ['deferred', 'defer()', /defer\(\) on .* that is deferred: only an undecided invocation can be deferred/],
  ['deferred', 'decideLate()', 'decided'],
  ['deferred', 'watchOutcome()', 'deferred'],
  ['deferred', 'settleWith()', 'deferred'],
  ['decided', 'decide()', /decide\(\) on .* that is decided: an invocation is decided, and charged, once/],
  ['decided', 'defer()', /defer\(\) on .* that is decided: only an undecided invocation can be deferred/],
  ['decided', 'decideLate()', /decideLate\(\) on .* that is decided: only a deferred invocation has a late part/],
  ['decided', 'watchOutcome()', 'decided'],
  ['decided', 'settleWith()', 'decided'],
];

describe('Invocation: the record of one invocation', () => {
  it.each(TRANSITIONS)('%s, %s: %p', (from, operation, expected) => {
    const invocation = recordIn(from);
    if (expected instanceof RegExp) {
      expect(() => OPERATIONS[operation](invocation)).toThrow(InvocationStateError);
      expect(() => OPERATIONS[operation](invocation)).toThrow(expected);
      expect(invocation.state).toBe(from); // a refused transition changes nothing
    } else {
      OPERATIONS[operation](invocation);
      expect(invocation.state).toBe(expected);
    }
  });

  it('covers every operation in every state', () => {
    const states: InvocationState[] = ['new', 'deferred', 'decided'];
    const pairs = TRANSITIONS.map(([from, operation]) => `${from} ${operation}`).sort();
    expect(pairs).toEqual(states.flatMap((s) => Object.keys(OPERATIONS).map((o) => `${s} ${o}`)).sort());
  });

  it('is one record per invocation object, found again by the interceptors, made only by a decision', () => {
    const request = {};
    expect(Invocation.find(request)).toBeUndefined();
    const invocation = Invocation.of(request, ctx);
    expect(Invocation.of(request, ctx)).toBe(invocation);
    expect(Invocation.find(request)).toBe(invocation);
    expect(Object.getOwnPropertySymbols(request)).toHaveLength(1);
    expect(Invocation.find({})).toBeUndefined();
  });

  it('finds the request of HTTP, and the arguments array of the other contexts', () => {
    const req = {};
    expect(invocationOf(new ExecutionContextHost([req, {}], BooksController, BooksController.prototype.list))).toBe(
      req,
    );
    const args = [{}, { id: 1 }, {}, {}];
    const graphql = new ExecutionContextHost(args, BooksController, BooksController.prototype.list);
    graphql.setType('graphql');
    expect(invocationOf(graphql)).toBe(args);
  });

  it('holds the deferring limiter and the early decision while deferred, and lets go of them once decided', () => {
    const invocation = recordIn('new');
    expect(invocation.deferredTo()).toBeUndefined();
    invocation.defer(limiter, early);
    expect(invocation.deferredTo()).toBe(limiter);
    expect(invocation.isDecided()).toBe(false);
    expect(invocation.decideLate()).toBe(early);
    expect(invocation.deferredTo()).toBeUndefined();
    expect(invocation.isDecided()).toBe(true);
  });

  it('keeps one outcome watch and one settlement: a second is refused, the first stays', () => {
    const invocation = recordIn('decided');
    invocation.watchOutcome(outcome);
    invocation.settleWith(settlement);
    expect(() => invocation.watchOutcome({ ...outcome })).toThrow(/is decided: its outcome is watched already/);
    expect(() => invocation.settleWith({ ...settlement })).toThrow(/is decided: it has a settlement already/);
    expect(invocation.outcomeWatch()).toBe(outcome);
    expect(invocation.settlementWatch()).toBe(settlement);
  });

  it('keeps the watches a deferred invocation started when its late part decides it', () => {
    const invocation = recordIn('deferred');
    invocation.watchOutcome(outcome);
    invocation.settleWith(settlement);
    invocation.decideLate();
    expect(invocation.outcomeWatch()).toBe(outcome);
    expect(invocation.settlementWatch()).toBe(settlement);
  });
});

class AuthGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

const perUser: RateLimitPolicy = { name: 'per-user', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'user' };
/** Decided by the global guard before authentication: what a deferral charges at once. */
const perIp: RateLimitPolicy = { name: 'per-ip', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip' };

@Controller('planned')
@UseGuards(AuthGuard)
class PlannedController {
  @Get()
  @RateLimit([perIp, perUser])
  list(): string {
    return 'ok';
  }
}

/** The same declarations on a controller of no module: the limiter never planned it, nor put its interceptor on it. */
@UseGuards(AuthGuard)
class UnplannedController {
  @RateLimit([perIp, perUser])
  list(): string {
    return 'ok';
  }
}

describe('the global guard defers only to an interceptor that will decide', () => {
  let moduleRef: TestingModule;
  let limiter: RateLimiter;
  let service: RateLimitService;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      // No HTTP server here, so no headers: the decisions are read from the store.
      imports: [RateLimitTestingModule.forRoot({ headers: 'none' })],
      controllers: [PlannedController],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    limiter = moduleRef.get(RateLimiter);
    service = moduleRef.get(RateLimitService);
  });
  afterAll(() => moduleRef.close());

  const remaining = async (ip: string, policy = perIp) => (await service.peek(policy, `ip:${ip}`)).remaining;
  const anonymous = (classRef: { prototype: { list: () => string } }, ip: string): [object, ExecutionContext] => {
    const req = { headers: {}, socket: { remoteAddress: ip } };
    return [req, new ExecutionContextHost([req, {}], classRef as never, classRef.prototype.list)];
  };

  it('defers a handler that carries the deferral interceptor', async () => {
    const [req, ctx] = anonymous(PlannedController, '203.0.113.7');
    await limiter.handle(ctx, 'global-guard');
    expect(Invocation.find(req)?.state).toBe('deferred');
    expect(await remaining('203.0.113.7')).toBe(4);
  });

  it('leaves a deferred invocation to the interceptor, which decides it once', async () => {
    const [req, ctx] = anonymous(PlannedController, '203.0.113.9');
    await limiter.handle(ctx, 'global-guard');
    await limiter.handle(ctx, 'guard'); // the route's RateLimitGuard, after authentication: not its decision
    expect(Invocation.find(req)?.state).toBe('deferred');
    expect(await remaining('203.0.113.9', perUser)).toBe(5);
    await limiter.handle(ctx, 'interceptor');
    expect(Invocation.find(req)?.state).toBe('decided');
    // No user came: the user-keyed policy counts the address.
    expect([await remaining('203.0.113.9'), await remaining('203.0.113.9', perUser)]).toEqual([4, 4]);
    await limiter.handle(ctx, 'interceptor');
    await limiter.handle(ctx, 'guard');
    expect([await remaining('203.0.113.9'), await remaining('203.0.113.9', perUser)]).toEqual([4, 4]);
  });

  it('refuses to defer, before charging anything, a handler without it', async () => {
    const [req, ctx] = anonymous(UnplannedController, '203.0.113.8');
    await expect(limiter.handle(ctx, 'global-guard')).rejects.toThrow(
      new InvocationStateError(
        'nest-rate-limit: the global guard cannot leave the user-keyed policies of UnplannedController.list to ' +
          'the interceptor: the handler does not carry it, so they would never be decided (a bug of ' +
          'nest-rate-limit; please report it)',
      ),
    );
    expect(Invocation.find(req)?.state).toBe('new');
    expect(await remaining('203.0.113.8')).toBe(5);
  });
});
