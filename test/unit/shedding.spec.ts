import { jest } from '@jest/globals';

import { Gradient2Limit, GRADIENT2_DEFAULTS } from '../../lib/shedding/gradient2.js';
import { LoadShedder, type SheddingTicket } from '../../lib/shedding/load-shedder.js';
import { EventLoopWatch, LOOP_SAMPLE_MS } from '../../lib/shedding/loop-delay.js';
import { SHEDDING_DEFAULTS, sheddingSettings } from '../../lib/shedding/shedding-options.js';

const bounds = { minLimit: 4, maxLimit: 200, initialLimit: 20, ...GRADIENT2_DEFAULTS };

/** `count` samples of `rttMs` each, with `inFlight` requests in flight (the limit's own, when omitted). */
function feed(limit: Gradient2Limit, rttMs: number, count: number, inFlight?: number): number {
  for (let i = 0; i < count; i++) limit.sample(rttMs, inFlight ?? limit.limit);
  return limit.limit;
}

describe('the Gradient2 limit', () => {
  it('grows while latency stays at its long-term level and the limit is used', () => {
    const limit = new Gradient2Limit(bounds);
    expect(feed(limit, 20, 100)).toBeGreaterThan(60);
  });

  it('falls when latency rises (requests queue), and recovers when it falls again', () => {
    const limit = new Gradient2Limit(bounds);
    const grown = feed(limit, 20, 200);
    const fallen = feed(limit, 80, 40); // four times slower: past the tolerance of 1.5
    expect(fallen).toBeLessThan(grown / 2);
    expect(feed(limit, 20, 200)).toBeGreaterThan(fallen * 2);
  });

  it('stays within its bounds whatever the samples', () => {
    // (Above 8: the gradient's floor of 0.5 and the queue allowance of 4 would hold a lower minimum at 8.)
    const limit = new Gradient2Limit({ ...bounds, minLimit: 10 });
    expect(feed(limit, 1, 5000)).toBe(200);
    // Latency rising without end (a constant one becomes the long-term level, and the limit grows again).
    for (let i = 0, rtt = 1; i < 200; i++, rtt *= 1.1) limit.sample(rtt, limit.limit);
    expect(limit.limit).toBe(10);
    expect(limit.reduce(0.1)).toBe(10);
  });

  it('does not grow while fewer than half the limit are in flight (application-limited)', () => {
    const limit = new Gradient2Limit(bounds);
    expect(feed(limit, 20, 500, 5)).toBe(20);
  });

  it('forgets a long-term latency left high by an overload once samples run twice as fast', () => {
    const limit = new Gradient2Limit(bounds);
    feed(limit, 200, 100);
    const before = limit.longLatencyMs;
    feed(limit, 20, 50);
    // The exponential average alone (window 600) would keep ~92% of the gap after 50 samples.
    expect(limit.longLatencyMs).toBeLessThan(20 + (before - 20) * 0.2);
  });
});

describe('the load shedder', () => {
  const at = { ms: 0 };
  const shedder = (settings = {}) => new LoadShedder({ ...SHEDDING_DEFAULTS, ...settings }, () => at.ms);

  it('admits each criticality up to its ceiling: sheddable first refused, then default, critical last', () => {
    const s = shedder({ initialLimit: 10, reserve: 0.2 });
    expect([s.ceiling('critical'), s.ceiling('default'), s.ceiling('sheddable')]).toEqual([10, 8, 6]);
    const held: SheddingTicket[] = [];
    const admitAll = (criticality: 'critical' | 'default' | 'sheddable') => {
      let admitted = 0;
      for (let ticket = s.admit(criticality); ticket !== undefined; ticket = s.admit(criticality)) {
        held.push(ticket);
        admitted++;
      }
      return admitted;
    };
    expect(admitAll('sheddable')).toBe(6);
    expect(admitAll('default')).toBe(2);
    expect(admitAll('critical')).toBe(2);
    expect(s.inFlight).toBe(10);
    expect([s.shed('sheddable'), s.shed('default'), s.shed('critical')]).toEqual([1, 1, 1]);
    for (const ticket of held) s.release(ticket, false);
    expect(s.inFlight).toBe(0);
  });

  it('releases a ticket once', () => {
    const s = shedder({ initialLimit: 10 });
    const ticket = s.admit('default') as SheddingTicket;
    at.ms += 50;
    s.release(ticket, true);
    s.release(ticket, true);
    expect(s.inFlight).toBe(0);
  });

  it('keeps a ceiling of at least 1: an idle instance admits every criticality', () => {
    const s = shedder({ minLimit: 1, maxLimit: 1, initialLimit: 1, reserve: 1 });
    expect(s.ceiling('sheddable')).toBe(1);
    const ticket = s.admit('sheddable') as SheddingTicket;
    expect(s.admit('critical')).toBeUndefined();
    s.release(ticket, false);
    expect(s.admit('default')).toBeDefined();
  });

  it('refuses sheddable requests and lowers the limit while the event loop lags past the threshold', () => {
    const s = shedder({ initialLimit: 100, maxEventLoopDelayMs: 100 });
    s.loopDelay(150);
    expect(s.lagging).toBe(true);
    expect(s.limit).toBe(90);
    expect(s.admit('sheddable')).toBeUndefined();
    expect(s.admit('default')).toBeDefined();
    s.loopDelay(20);
    expect(s.lagging).toBe(false);
    expect(s.limit).toBe(90);
    expect(s.admit('sheddable')).toBeDefined();
  });

  it('ignores the event loop with a threshold of 0', () => {
    const s = shedder({ initialLimit: 100, maxEventLoopDelayMs: 0 });
    s.loopDelay(10_000);
    expect([s.lagging, s.limit]).toEqual([false, 100]);
  });

  it('tells a Retry-After of at least 1 s, from the time the requests in flight take to drain', () => {
    const s = shedder({ minLimit: 20, maxLimit: 20, initialLimit: 20 });
    expect(s.retryAfterSeconds()).toBe(1);
    const tickets = Array.from({ length: 20 }, () => s.admit('critical') as SheddingTicket);
    at.ms += 3000;
    for (const ticket of tickets.splice(0, 10)) s.release(ticket, true); // one window: long-term latency 3 s
    expect(s.inFlight).toBe(10);
    expect(s.retryAfterSeconds()).toBe(2); // 3 s × 10 in flight / limit 20 = 1.5 s
    for (const ticket of tickets) s.release(ticket, false);
  });

  it('teaches the limit one mean latency a window (1 s, 10 requests at least), not each request', () => {
    const s = shedder({ minLimit: 4, maxLimit: 200, initialLimit: 20 });
    const reference = new Gradient2Limit({ ...SHEDDING_DEFAULTS, maxLimit: 200, ...GRADIENT2_DEFAULTS });
    const round = (latencyMs: number) => {
      const tickets = Array.from({ length: 20 }, () => s.admit('critical') as SheddingTicket);
      at.ms += latencyMs;
      for (const ticket of tickets) s.release(ticket, true);
    };
    for (let i = 0; i < 40; i++) round(20); // 800 requests in 800 ms: no window is over yet
    expect(s.limit).toBe(20);
    // Five windows of a second: five samples, each moving the limit by a fifth of the queue allowance.
    for (let window = 0; window < 5; window++) {
      at.ms += 1000;
      round(20);
      reference.sample(20, 20);
    }
    expect(s.limit).toBe(24);
    expect(reference.limit).toBe(24);
    // Fed each request, the same 900 samples would have doubled it (where 20 in flight is half of it).
    const perRequest = new Gradient2Limit({ ...SHEDDING_DEFAULTS, maxLimit: 200, ...GRADIENT2_DEFAULTS });
    for (let i = 0; i < 900; i++) perRequest.sample(20, 20);
    expect(perRequest.limit).toBe(40);
  });
});

describe('the event-loop watch', () => {
  afterEach(() => jest.useRealTimers());

  it('reports how late each tick fired, from the second one (the first measures the start)', () => {
    jest.useFakeTimers();
    const at = { ms: 0 };
    const delays: number[] = [];
    const watch = new EventLoopWatch(
      (delayMs) => delays.push(delayMs),
      () => at.ms,
    );
    const tick = (lateMs: number) => {
      at.ms += LOOP_SAMPLE_MS + lateMs;
      jest.advanceTimersByTime(LOOP_SAMPLE_MS);
    };
    tick(900); // the application's start
    tick(0);
    tick(250); // the loop was blocked for 250 ms
    tick(3);
    watch.close();
    tick(500);
    expect(delays).toEqual([0, 250, 3]);
  });
});

describe('the shedding option', () => {
  it('is off unless given, and true takes every default', () => {
    expect(sheddingSettings(undefined)).toBeUndefined();
    expect(sheddingSettings(false)).toBeUndefined();
    expect(sheddingSettings(true)).toEqual(SHEDDING_DEFAULTS);
    expect(sheddingSettings({ maxEventLoopDelay: '250ms', reserve: 0 })).toEqual({
      ...SHEDDING_DEFAULTS,
      maxEventLoopDelayMs: 250,
      reserve: 0,
    });
  });

  it.each([
    [{ minLimit: 10, maxLimit: 5 }, 'shedding.minLimit" must not be above shedding.maxLimit (5), got 10'],
    [{ minLimit: 0 }, 'shedding.minLimit" must be an integer >= 1'],
    [{ maxLimit: 2.5 }, 'shedding.maxLimit" must be an integer >= 1'],
    [{ initialLimit: -1 }, 'shedding.initialLimit" must be an integer >= 1'],
    [{ reserve: 1.5 }, 'shedding.reserve" must be a number from 0 to 1'],
    [{ reserve: -0.1 }, 'shedding.reserve" must be a number from 0 to 1'],
    [{ maxEventLoopDelay: '1 minute' }, 'shedding.maxEventLoopDelay" must be 0 (off)'],
    [{ reserv: 0.2 }, 'option "shedding.reserv" is not an option of RateLimitModule'],
  ])('stops the start on %j, naming the field', (option, message) => {
    expect(() => sheddingSettings(option as never)).toThrow(message);
  });

  it('must be true or an object', () => {
    expect(() => sheddingSettings('on' as never)).toThrow('option "shedding" must be true or an object');
  });
});
