import { CRITICALITIES } from '../../../lib/policy/criticality.js';
import { LoadShedder } from '../../../lib/shedding/load-shedder.js';
import { SHEDDING_DEFAULTS } from '../../../lib/shedding/shedding-options.js';
import { CeilingShedder, Dependency, VegasLimit, type AdaptiveLimit } from '../src/shedding/index.js';

// The pieces of the shedding simulation (docs/shedding-load.md) that are not the library's: Netflix's VegasLimit
// as written here, LoadShedder's ceilings over it, and the dependency's queue.

const fixed = (limit: number): AdaptiveLimit => ({ limit, sample: () => limit });

describe("CeilingShedder: LoadShedder's admission over another limit", () => {
  it.each([0, 0.2, 0.5, 1])('has the ceilings of LoadShedder for every limit from 1 to 300 (reserve %s)', (reserve) => {
    for (let limit = 1; limit <= 300; limit++) {
      const settings = { ...SHEDDING_DEFAULTS, minLimit: 1, maxLimit: 300, initialLimit: limit, reserve };
      const lib = new LoadShedder(settings, () => 0);
      const ours = new CeilingShedder(settings, fixed(limit), () => 0);
      expect([limit, ...CRITICALITIES.map((c) => ours.ceiling(c))]).toEqual([
        limit,
        ...CRITICALITIES.map((c) => lib.ceiling(c)),
      ]);
    }
  });

  it('admits as LoadShedder does, request for request, and releases a ticket once', () => {
    const settings = { ...SHEDDING_DEFAULTS, initialLimit: 10 };
    const lib = new LoadShedder(settings, () => 0);
    const ours = new CeilingShedder(settings, fixed(10), () => 0);
    const order = ['sheddable', 'default', 'critical', 'default', 'sheddable', 'critical'] as const;
    for (let i = 0; i < 30; i++) {
      const c = order[i % order.length] ?? 'default';
      expect([i, ours.admit(c) === undefined]).toEqual([i, lib.admit(c) === undefined]);
    }
    expect(ours.inFlight).toBe(lib.inFlight);
    const shedder = new CeilingShedder(settings, fixed(10), () => 0);
    const ticket = shedder.admit('critical');
    if (ticket === undefined) throw new Error('an idle shedder refused a critical request');
    shedder.release(ticket, false);
    shedder.release(ticket, false);
    expect(shedder.inFlight).toBe(0);
  });
});

describe("VegasLimit, as Netflix's (concurrency-limits)", () => {
  const vegas = (initialLimit: number, probeMultiplier = 0) =>
    new VegasLimit({ minLimit: 1, maxLimit: 1000, initialLimit, probeMultiplier }, () => 0);

  it('takes the least latency as the no-load one and moves the limit by log10 steps of it', () => {
    const v = vegas(20);
    expect(v.sample(20, 20)).toBe(20); // the first sample only sets the no-load latency
    expect(v.noLoadLatencyMs).toBe(20);
    // no queue (<= 1): grows by 6 x log10
    expect(v.sample(20, 20)).toBe(26);
    // queue ceil(26 x (1 - 20/21)) = 2: below alpha 3, grows by 1
    expect(v.sample(21, 26)).toBe(27);
    // queue ceil(27 x (1 - 20/24)) = 5: between alpha 3 and beta 6, unchanged
    expect(v.sample(24, 27)).toBe(27);
    // queue ceil(27 x 0.5) = 14 > beta: falls by 1
    expect(v.sample(40, 27)).toBe(26);
    // fewer than half in flight: unchanged
    expect(v.sample(40, 12)).toBe(26);
    // a shorter latency is the new no-load one, and moves nothing
    expect(v.sample(10, 26)).toBe(26);
    expect(v.noLoadLatencyMs).toBe(10);
  });

  it('steps by 2 from a limit of 100 (log10), and by 6 x 2 with no queue', () => {
    const v = vegas(150);
    v.sample(20, 150);
    expect(v.sample(20, 150)).toBe(162);
    expect(v.sample(100, 162)).toBe(160);
  });

  it('keeps the least latency for good without a probe; with one, takes a sample anew every ~multiplier x limit', () => {
    const sticky = vegas(10);
    const probing = vegas(10, 2); // jitter 0.5 (random 0): every 0.5 x 2 x limit samples
    for (const v of [sticky, probing]) v.sample(20, 10);
    for (let i = 0; i < 50; i++) for (const v of [sticky, probing]) v.sample(40, 10);
    expect(sticky.noLoadLatencyMs).toBe(20);
    expect(probing.noLoadLatencyMs).toBe(40);
  });
});

describe("the simulation's Dependency", () => {
  it('serves `concurrency` at once and the rest in the order they came', () => {
    const done: [number, string][] = [];
    const pending: [number, string][] = [];
    const d = new Dependency<string>(
      2,
      () => 10,
      (atUs, id) => pending.push([atUs, id]),
    );
    for (const id of ['a', 'b', 'c', 'd']) d.submit(id, 0);
    expect(d.queued).toBe(2);
    while (pending.length > 0) {
      pending.sort((x, y) => x[0] - y[0]);
      const [atUs, id] = pending.shift() as [number, string];
      done.push([atUs, id]);
      d.finish(atUs);
    }
    expect(done).toEqual([
      [10, 'a'],
      [10, 'b'],
      [20, 'c'],
      [20, 'd'],
    ]);
    expect(d.serving).toBe(0);
  });
});
