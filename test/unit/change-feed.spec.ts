import { jest } from '@jest/globals';

import { encodeChanges, type FeedEvents, listenOn } from '../../lib/stores/store-changes.js';
import { type FeedPool, PostgresChangeFeed } from '../../lib/stores/postgres/notify-changes.js';
import type { RateLimitChangeListener, RateLimitStoreChange } from '../../lib/stores/engine-store.js';
import { StoredIdentities } from '../../lib/stores/storage-key.js';

// The listener's loop of a feed of changes (the Redis and PostgreSQL feeds share it), on Jest's fake timers.

/** A connection the test drives: it answers pings when told, and can be closed from the other side. */
class FakeConnection {
  closed = false;
  pings: { resolve: () => void }[] = [];
  constructor(readonly events: FeedEvents) {}
  ping = () => new Promise<void>((resolve) => this.pings.push({ resolve }));
  close = () => {
    this.closed = true;
  };
}

function recorder() {
  const seen: string[] = [];
  const changes: (RateLimitStoreChange[] | 'everything')[] = [];
  const listener: RateLimitChangeListener = {
    changed: (list) => changes.push(list === 'everything' ? list : [...list]),
    confirmed: (sentAt) => seen.push(`confirmed ${sentAt}`),
    live: (since) => seen.push(`live ${since}`),
    lost: (reason) => seen.push(`lost ${reason.message}`),
  };
  return { seen, changes, listener };
}

describe('the listener of a feed of changes', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('is live once subscribed, and each answered ping confirms what was announced before it was sent', async () => {
    const connections: FakeConnection[] = [];
    const { seen, listener } = recorder();
    const stop = await listenOn(async (_, events) => {
      const c = new FakeConnection(events);
      connections.push(c);
      return c;
    }, listener);
    expect(seen).toEqual([`live ${performance.now()}`]);
    await jest.advanceTimersByTimeAsync(250);
    const sentAt = performance.now();
    await jest.advanceTimersByTimeAsync(100);
    connections[0]?.pings[0]?.resolve();
    await jest.advanceTimersByTimeAsync(0);
    expect(seen.at(-1)).toBe(`confirmed ${sentAt}`);
    await stop();
    expect(connections[0]?.closed).toBe(true);
  });

  it('replaces a connection whose ping goes unanswered, and one that closes', async () => {
    const connections: FakeConnection[] = [];
    const attempts: number[] = [];
    const { seen, listener } = recorder();
    const stop = await listenOn(async (attempt, events) => {
      attempts.push(attempt);
      const c = new FakeConnection(events);
      connections.push(c);
      return c;
    }, listener);
    // The first ping goes out at 250 ms and is never answered: at the check past 1 s (1500 ms) the connection
    // is given up, and the next is made 100 ms later.
    await jest.advanceTimersByTimeAsync(1_499);
    expect(connections[0]?.closed).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(connections[0]?.closed).toBe(true);
    await jest.advanceTimersByTimeAsync(100);
    expect(connections[0]?.closed).toBe(true);
    expect(seen).toContain('lost no answer to a ping within 1000 ms');
    expect(attempts).toEqual([0, 1]);
    expect(seen.at(-1)).toMatch(/^live /);
    connections[1]?.events.closed(new Error('the connection closed'));
    await jest.advanceTimersByTimeAsync(99);
    expect(attempts).toEqual([0, 1]);
    await jest.advanceTimersByTimeAsync(1);
    expect(attempts).toEqual([0, 1, 2]);
    expect(seen.filter((line) => line.startsWith('live'))).toHaveLength(3);
    await stop();
    await jest.advanceTimersByTimeAsync(5_000);
    expect(attempts).toEqual([0, 1, 2]);
  });

  it('backs off while connections fail, and resolves once the first try is done', async () => {
    const attempts: number[] = [];
    const { seen, listener } = recorder();
    const stop = await listenOn(async (attempt) => {
      attempts.push(performance.now());
      throw new Error(`refused ${attempt}`);
    }, listener);
    expect(seen).toEqual(['lost refused 0']);
    await jest.advanceTimersByTimeAsync(3_000);
    expect(attempts.slice(0, 5)).toEqual([0, 250, 750, 1750, 2750]);
    await stop();
  });

  it('gives up a connection that is not subscribed within 3 s, and closes it when it comes', async () => {
    const late = new FakeConnection({ message: () => undefined, closed: () => undefined });
    let release: (() => void) | undefined;
    const { seen, listener } = recorder();
    const listening = listenOn(
      (attempt) =>
        attempt === 0 ? new Promise((resolve) => (release = () => resolve(late))) : Promise.reject(new Error('down')),
      listener,
    );
    await jest.advanceTimersByTimeAsync(3_000);
    const stop = await listening;
    expect(seen[0]).toBe('lost not subscribed within 3000 ms');
    release?.();
    await jest.advanceTimersByTimeAsync(0);
    expect(late.closed).toBe(true);
    expect(seen.some((line) => line.startsWith('live'))).toBe(false);
    await stop();
  });

  it('tells the changes a message announces; a message it cannot read forgets everything', async () => {
    let events: FeedEvents | undefined;
    const { seen, changes, listener } = recorder();
    const stop = await listenOn(async (_, e) => {
      events = e;
      return new FakeConnection(e);
    }, listener);
    events?.message(encodeChanges([{ policy: 'p', key: 'ip:1' }]));
    events?.message(encodeChanges('everything'));
    expect(changes).toEqual([[{ policy: 'p', key: 'ip:1' }], 'everything']);
    events?.message('hello');
    events?.message('[["p"]]');
    expect(seen.filter((line) => line.startsWith('live'))).toHaveLength(3);
    await stop();
  });
});

describe('the PostgreSQL feed', () => {
  it('cuts a long announcement into payloads NOTIFY takes (under 8000 bytes), losing none', async () => {
    const sent: string[] = [];
    const pool = { query: async (_: string, values: string[]) => sent.push(values[1] as string) };
    const feed = new PostgresChangeFeed(pool as unknown as FeedPool, 'channel', new StoredIdentities('rl:', {}));
    const changes = Array.from({ length: 500 }, (_, i) => ({ policy: 'per-user', key: `user:${'x'.repeat(40)}${i}` }));
    await feed.announce(changes);
    expect(sent.length).toBeGreaterThan(1);
    for (const payload of sent) expect(Buffer.byteLength(payload)).toBeLessThan(8000);
    expect(sent.flatMap((payload) => JSON.parse(payload))).toEqual(changes.map((c) => [c.policy, c.key]));
  });
});
