import { validatePolicy } from '../../lib/index.js';
import { type Admission, violations } from '../support/history.js';

// The history checker of test/fault/history.spec.ts must catch a fleet that admits too much, and never flag a
// history whose admissions could all lie where the algorithm allows them.

const at = (from: number, to = from, cost = 1): Admission => ({ from, to, cost });
const times = (n: number, from: number, step = 0): Admission[] =>
  Array.from({ length: n }, (_, i) => at(from + i * step));

describe('the history checker', () => {
  const fixed = validatePolicy({ algorithm: 'fixed-window', limit: 3, window: 100 });

  it('flags a fixed window with one admission too many, and only that window', () => {
    expect(violations(fixed, [...times(3, 0, 10), ...times(3, 100, 10)])).toEqual([]);
    expect(violations(fixed, [...times(4, 0, 10), ...times(3, 100, 10)])).toEqual(['window [0, 100) admitted 4 > 3']);
  });

  it('counts an admission only where it surely lies (its answer came after the window ended)', () => {
    expect(violations(fixed, [...times(3, 0, 10), at(95, 105)])).toEqual([]);
  });

  it('leaves out the windows across an exempt span (a failover that lost writes)', () => {
    expect(violations(fixed, times(4, 0, 10), [[50, 60]])).toEqual([]);
  });

  it('holds a sliding log to every span of its window', () => {
    const log = validatePolicy({ algorithm: 'sliding-window-log', limit: 3, window: 100 });
    expect(violations(log, [...times(3, 0, 10), ...times(3, 120, 10)])).toEqual([]);
    // 3 at the end of one fixed window and 1 at the start of the next: fine for a fixed window, not for a log
    expect(violations(log, [...times(3, 80, 5), at(110)])).toEqual(['[80, 180) admitted 4 > 3']);
    expect(violations(fixed, [...times(3, 80, 5), at(110)])).toEqual([]);
  });

  it('holds token buckets and GCRA to the burst plus the refill over every interval', () => {
    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      const bucket = validatePolicy({ algorithm, limit: 10, window: 1000, burst: 5 });
      // the burst at once, then one every 100 ms: as much as the bucket allows
      expect(violations(bucket, [...times(5, 0), ...times(10, 100, 100)])).toEqual([]);
      expect(violations(bucket, [...times(5, 0), ...times(3, 100, 10)])).not.toEqual([]);
      expect(violations(bucket, times(6, 0))).toEqual(['[0, 0] admitted 6 > 5.00']);
    }
  });

  it("counts what a bucket's key owes at the end of an interval (a settlement's overrun) as admitted there", () => {
    const bucket = validatePolicy({ algorithm: 'token-bucket', limit: 10, window: 1000, burst: 5 });
    // a reservation of 1 at 0, settled at 8 at 10 ms: the key owes 3 from then on, 2.9 once 10 ms refilled 0.1
    const settled = [at(0, 10, 8)];
    expect(violations(bucket, settled)).toEqual(['[0, 10] admitted 8 > 5.10']);
    expect(violations(bucket, settled, [], (ms) => (ms >= 10 ? 3 : 0))).toEqual([]);
    expect(violations(bucket, [...settled, at(10)], [], (ms) => (ms >= 10 ? 3 : 0))).toEqual([
      '[0, 10] admitted 9 > 8.10',
    ]);
  });

  it('holds a quota to its limit over the whole history, costs counted', () => {
    const quota = validatePolicy({ algorithm: 'quota', period: 'month', limit: 10 });
    expect(violations(quota, [at(0, 0, 4), at(5_000_000, 5_000_000, 6)])).toEqual([]);
    expect(violations(quota, [at(0, 0, 4), at(5_000_000, 5_000_000, 7)])).toHaveLength(1);
  });

  it('holds a concurrency limit to the handler runs surely in flight at once', () => {
    const concurrency = validatePolicy({ algorithm: 'concurrency', limit: 2, window: 1000 });
    expect(violations(concurrency, [at(0, 50), at(10, 60), at(55, 90)])).toEqual([]);
    expect(violations(concurrency, [at(0, 50), at(10, 60), at(20, 90)])).toEqual(['3 units in flight at 20 > 2']);
  });
});
