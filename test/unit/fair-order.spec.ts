import fc from 'fast-check';

import { FairOrder } from '../../lib/service/fair-order.js';
import { IndexedHeap } from '../../lib/service/indexed-heap.js';

/** A waiter of the specs: its name (fair key and number), fair key, cost and weight. */
interface Waiter {
  readonly name: string;
  readonly fairKey: string;
  readonly cost: number;
  readonly weight: number;
}

/** An arrival, or a serving of whoever comes first. */
type Step = { arrive: Omit<Waiter, 'name'> } | 'serve';

const steps = fc.array(
  fc.oneof(
    fc.record({
      arrive: fc.record({
        fairKey: fc.constantFrom('', 'a', 'b', 'c'),
        cost: fc.integer({ min: 0, max: 5 }),
        weight: fc.constantFrom(1, 2, 0.5),
      }),
    }),
    fc.constant('serve' as const),
  ),
  { maxLength: 60 },
);

/**
 * Start-time fair queuing as it was written before waiters could give their turn back: every waiter tagged on
 * arrival, served by start tag, then arrival. With no waiter leaving, FairOrder must serve in this order.
 */
function taggedOnArrival(run: readonly Step[]): string[] {
  const queued: { name: string; start: number; arrival: number }[] = [];
  const finishes = new Map<string, number>();
  let virtualNow = 0;
  const served: string[] = [];
  run.forEach((step, arrival) => {
    if (step === 'serve') {
      queued.sort((x, y) => x.start - y.start || x.arrival - y.arrival);
      const first = queued.shift();
      if (first === undefined) return;
      virtualNow = Math.max(virtualNow, first.start);
      served.push(first.name);
      return;
    }
    const { fairKey, cost, weight } = step.arrive;
    const start = Math.max(virtualNow, finishes.get(fairKey) ?? 0);
    finishes.set(fairKey, start + Math.max(cost, Number.MIN_VALUE) / weight);
    queued.push({ name: `${fairKey}${arrival}`, start, arrival });
  });
  return served;
}

describe('FairOrder', () => {
  it('serves as start-time fair queuing tagged on arrival while no waiter leaves', () => {
    fc.assert(
      fc.property(steps, (run) => {
        const order = new FairOrder<Waiter>();
        const served: string[] = [];
        run.forEach((step, arrival) => {
          if (step !== 'serve') {
            const waiter = { name: `${step.arrive.fairKey}${arrival}`, ...step.arrive };
            order.arrive(waiter, waiter.fairKey, waiter.cost, waiter.weight);
            return;
          }
          const first = order.first();
          if (first === undefined) return;
          order.served(first);
          served.push(first.name);
        });
        expect(served).toEqual(taggedOnArrival(run));
      }),
    );
  });

  it('keeps no fair key once every waiter has left unserved', () => {
    fc.assert(
      fc.property(steps, fc.infiniteStream(fc.nat()), (run, picks) => {
        const order = new FairOrder<Waiter>();
        run.forEach((step, arrival) => {
          if (step !== 'serve') order.arrive({ name: `${arrival}`, ...step.arrive }, step.arrive.fairKey, 1, 1);
        });
        const waiters = [...order.values()];
        while (waiters.length > 0) {
          const [leaving] = waiters.splice(picks.next().value % waiters.length, 1);
          order.left(leaving as Waiter);
        }
        expect(order.size).toBe(0);
        expect(order.first()).toBeUndefined();
      }),
    );
  });
});

describe('IndexedHeap', () => {
  interface Entry {
    heapIndex: number;
    value: number;
    readonly id: number;
  }

  it('always has the least entry first, whatever is pushed, moved or taken out', () => {
    const operation = fc.oneof(
      fc.record({ push: fc.integer({ min: 0, max: 20 }) }),
      fc.record({ remove: fc.nat() }),
      fc.record({ move: fc.nat(), to: fc.integer({ min: 0, max: 20 }) }),
    );
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 100 }), (operations) => {
        const heap = new IndexedHeap<Entry>((a, b) => a.value < b.value || (a.value === b.value && a.id < b.id));
        const entries: Entry[] = [];
        operations.forEach((op, id) => {
          if ('push' in op) {
            const entry = { heapIndex: -1, value: op.push, id };
            entries.push(entry);
            heap.push(entry);
          } else if (entries.length > 0 && 'remove' in op) {
            const [entry] = entries.splice(op.remove % entries.length, 1);
            heap.remove(entry as Entry);
          } else if (entries.length > 0 && 'move' in op) {
            const entry = entries[op.move % entries.length] as Entry;
            entry.value = op.to;
            heap.update(entry);
          }
          const least = [...entries].sort((a, b) => a.value - b.value || a.id - b.id)[0];
          expect(heap.peek()).toBe(least);
          expect(heap.size).toBe(entries.length);
        });
      }),
    );
  });
});
