import fc from 'fast-check';

import { EventQueue } from '../src/fleet/event-queue.js';

describe("the fleet simulation's EventQueue", () => {
  it('gives events back by time, and those at the same µs in the order they were queued', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.boolean()), { maxLength: 200 }), (steps) => {
        const queue = new EventQueue<number>();
        const model: { atUs: number; n: number }[] = [];
        const popped: number[] = [];
        const expected: number[] = [];
        steps.forEach(([atUs, pop], n) => {
          queue.push(atUs, n);
          model.push({ atUs, n });
          if (pop) {
            // the model: a stable sort by time, which keeps the queued order of equal times
            model.sort((a, b) => a.atUs - b.atUs);
            expected.push((model.shift() as { n: number }).n);
            popped.push(queue.pop() as number);
          }
        });
        model.sort((a, b) => a.atUs - b.atUs);
        expect(queue.size).toBe(model.length);
        expect(queue.nextUs).toBe(model[0]?.atUs ?? Infinity);
        while (queue.size > 0) popped.push(queue.pop() as number);
        expected.push(...model.map((e) => e.n));
        expect(popped).toEqual(expected);
        expect(queue.pop()).toBeUndefined();
      }),
    );
  });
});
