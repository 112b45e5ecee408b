import { Test, type TestingModule } from '@nestjs/testing';

import {
  type RateLimitPolicy,
  RateLimitPolicyError,
  type RateLimitReservation,
  RateLimitService,
} from '../../lib/index.js';
import { FakeClock, RateLimitTestingModule } from '../../lib/testing/index.js';
import { alignedStart } from '../support/time.js';

/** 100 tokens a minute, all of them at once: a completion's tokens are charged here. */
const tokens: RateLimitPolicy = { name: 'ai-tokens', algorithm: 'token-bucket', limit: 100, window: '1m' };
/** 10 units a minute, counted in clock-aligned windows: a refund after the window has passed is not made. */
const perMinute: RateLimitPolicy = { name: 'per-minute', algorithm: 'fixed-window', limit: 10, window: '1m' };
const KEY = 'user:1';

describe('RateLimitService.reserve', () => {
  let moduleRef: TestingModule;
  let service: RateLimitService;
  let clock: FakeClock;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({ imports: [RateLimitTestingModule.forRoot()] }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    service = moduleRef.get(RateLimitService);
    clock = moduleRef.get(FakeClock).set(alignedStart(60_000));
  });
  afterEach(() => moduleRef.close());

  const remaining = async (policy = tokens) => (await service.peek(policy, KEY)).remaining;
  const reserve = (cost: number, signal?: AbortSignal) =>
    service.reserve([{ policy: tokens, key: KEY, cost }], signal === undefined ? {} : { signal });

  it('charges the estimate at once, all-or-nothing with the other items', async () => {
    const reservation = await service.reserve([
      { policy: tokens, key: KEY, cost: 60 },
      { policy: perMinute, key: KEY, cost: 1 },
    ]);
    expect(reservation.allowed).toBe(true);
    expect(reservation.decisions.map((d) => d.remaining)).toEqual([40, 9]);
    expect(await remaining()).toBe(40);
  });

  it('gives back what the estimate exceeded when settled, and answers the state afterwards', async () => {
    const reservation = await reserve(60);
    const [after] = await reservation.settle(25);
    expect(after?.remaining).toBe(75);
    expect(await remaining()).toBe(75);
  });

  it('charges an overrun past the limit: a debt later requests wait out', async () => {
    const reservation = await reserve(60);
    const [after] = await reservation.settle(130);
    expect(after?.remaining).toBe(0);
    // 130 taken of 100: one more waits for 31 to drain at 100 a minute, 18.6 s
    const denied = await service.consume(tokens, KEY);
    expect(denied.allowed).toBe(false);
    expect(denied.retryAfterMs).toBe(18_600);
    clock.advance(18_600);
    expect((await service.consume(tokens, KEY)).allowed).toBe(true);
  });

  it('settles each item at its own actual cost when given one per item', async () => {
    const reservation = await service.reserve([
      { policy: tokens, key: KEY, cost: 60 },
      { policy: perMinute, key: KEY, cost: 3 },
    ]);
    await reservation.settle([20, 3]);
    expect(await remaining()).toBe(80);
    expect(await remaining(perMinute)).toBe(7);
  });

  it('gives the whole charge back when cancelled', async () => {
    const reservation = await reserve(60);
    await reservation.cancel();
    expect(await remaining()).toBe(100);
  });

  type Call = (reservation: RateLimitReservation) => Promise<unknown>;
  const settle10: Call = (r) => r.settle(10);
  const settle0: Call = (r) => r.settle(0);
  const cancel: Call = (r) => r.cancel();

  it.each<[string, Call, Call, number]>([
    ['settle, then settle', settle10, settle0, 90],
    ['settle, then cancel', settle10, cancel, 90],
    ['cancel, then settle', cancel, settle0, 100],
    ['cancel, then cancel', cancel, cancel, 100],
  ])('does only the first call: %s', async (_, first, second, left) => {
    const reservation = await reserve(40);
    await first(reservation);
    await second(reservation);
    expect(await remaining()).toBe(left);
  });

  it('charges nothing when denied, and then settle and cancel do nothing', async () => {
    await reserve(90);
    const denied = await reserve(20);
    expect(denied.allowed).toBe(false);
    expect(denied.decisions[0]?.allowed).toBe(false);
    await denied.settle(0);
    await denied.cancel();
    expect(await remaining()).toBe(10);
  });

  it('is cancelled by its signal when aborted before it is settled', async () => {
    const abort = new AbortController();
    const reservation = await reserve(60, abort.signal);
    abort.abort(new Error('client went away'));
    await reservation.cancel(); // resolves as the abort's own cancel did
    expect(await remaining()).toBe(100);
    await reservation.settle(60);
    expect(await remaining()).toBe(100);
  });

  it('ignores its signal once settled', async () => {
    const abort = new AbortController();
    const reservation = await reserve(60, abort.signal);
    await reservation.settle(30);
    abort.abort();
    expect(await remaining()).toBe(70);
  });

  it('rejects with the reason of an already aborted signal, charging nothing', async () => {
    const reason = new Error('already gone');
    await expect(reserve(60, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(await remaining()).toBe(100);
  });

  it('rejects a bad actual cost with an error naming the policy and `actual`, and stays open', async () => {
    const reservation = await service.reserve([
      { policy: tokens, key: KEY, cost: 60 },
      { policy: perMinute, key: KEY, cost: 1 },
    ]);
    await expect(reservation.settle(-1)).rejects.toThrow(
      'Invalid rate-limit policy "ai-tokens" (declared on RateLimitService), field "actual": actual must be a non-negative integer, got -1',
    );
    await expect(reservation.settle([1])).rejects.toThrow(
      'field "actual": settle() takes one number, or an array of one per item (2), got an array of 1',
    );
    await expect(reservation.settle([1, 1.5])).rejects.toBeInstanceOf(RateLimitPolicyError);
    await reservation.settle([10, 1]);
    expect(await remaining()).toBe(90);
  });

  it('gives nothing back into a window that has passed: its units may be another request’s now', async () => {
    const reservation = await service.reserve([{ policy: perMinute, key: KEY, cost: 5 }]);
    clock.advance(60_000);
    for (let i = 0; i < 10; i++) expect((await service.consume(perMinute, KEY)).allowed).toBe(true);
    await reservation.cancel();
    expect((await service.consume(perMinute, KEY)).allowed).toBe(false);
  });
});
