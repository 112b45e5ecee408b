import { CallBatcher } from '../../lib/stores/redis/call-batcher.js';

/** A request as the batcher sees it: anything (here, its keys). */
interface BatchedRequest {
  readonly keys: readonly string[];
}

/** A fake Redis: records each call's requests (by their keys) and answers it when the test says so. */
function fakeRedis() {
  const calls: { keys: string[][]; answer(): void; fail(error: Error): void }[] = [];
  const send = (requests: readonly BatchedRequest[]) =>
    new Promise<unknown[]>((resolve, reject) => {
      calls.push({
        keys: requests.map((r) => [...r.keys]),
        answer: () => resolve(requests.map((r) => r.keys.flatMap(() => [1, 9, 60_000, 0]))),
        fail: reject,
      });
    });
  return { calls, send };
}

const request = (...keys: string[]): BatchedRequest => ({ keys });
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the Redis call batcher', () => {
  it("sends the consumes of one turn of the event loop as one call, in their order, and the next turn's at once beside it", async () => {
    const redis = fakeRedis();
    const batcher = new CallBatcher<BatchedRequest>(redis.send);
    const first = [batcher.consume(request('a')), batcher.consume(request('b', 'b2')), batcher.consume(request('a'))];
    expect(redis.calls).toHaveLength(0);
    await turn();
    expect(redis.calls.map((c) => c.keys)).toEqual([[['a'], ['b', 'b2'], ['a']]]);
    const next = batcher.consume(request('c'));
    await turn();
    // nothing waits for the call in flight
    expect(redis.calls.map((c) => c.keys)).toEqual([[['a'], ['b', 'b2'], ['a']], [['c']]]);
    redis.calls[1]?.answer();
    await expect(next).resolves.toEqual([1, 9, 60_000, 0]);
    redis.calls[0]?.answer();
    // each request gets its own part of the reply: 4 integers per item
    expect((await Promise.all(first)).map((reply) => (reply as unknown[]).length)).toEqual([4, 8, 4]);
  });

  it('splits a turn of 8 consumes or more into two calls, and of more than 128 into calls of 64 at most', async () => {
    const redis = fakeRedis();
    const batcher = new CallBatcher<BatchedRequest>(redis.send);
    const all = Array.from({ length: 130 }, (_, i) => batcher.consume(request(`k${i}`)));
    await turn();
    expect(redis.calls.map((c) => c.keys.length)).toEqual([44, 44, 42]);
    expect(redis.calls.flatMap((c) => c.keys.flat())).toEqual(Array.from({ length: 130 }, (_, i) => `k${i}`));
    redis.calls.forEach((c) => c.answer());
    await expect(Promise.all(all)).resolves.toHaveLength(130);
    const eight = Array.from({ length: 8 }, (_, i) => batcher.consume(request(`j${i}`)));
    await turn();
    const seven = Array.from({ length: 7 }, (_, i) => batcher.consume(request(`j${i}`)));
    await turn();
    expect(redis.calls.slice(3).map((c) => c.keys.length)).toEqual([4, 4, 7]);
    redis.calls.slice(3).forEach((c) => c.answer());
    await Promise.all([...eight, ...seven]);
  });

  it("fails the requests of a failed call only, and a request's own reply may be a promise of its own call", async () => {
    const redis = fakeRedis();
    const sent: BatchedRequest[][] = [];
    const batcher = new CallBatcher<BatchedRequest>(async (requests) => {
      sent.push([...requests]);
      if (sent.length === 1) throw new Error('Connection is closed.');
      return requests.map((r, i) =>
        i === 0 ? Promise.resolve([2, 0, 5, 5]) : redis.send([r]).then(([reply]) => reply),
      );
    });
    const failing = batcher.consume(request('a'));
    await turn();
    const next = [batcher.consume(request('b')), batcher.consume(request('c'))];
    await expect(failing).rejects.toThrow('Connection is closed.');
    await turn();
    redis.calls[0]?.answer();
    await expect(Promise.all(next)).resolves.toEqual([
      [2, 0, 5, 5],
      [1, 9, 60_000, 0],
    ]);
  });
});
