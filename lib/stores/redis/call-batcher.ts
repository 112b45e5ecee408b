/** A request waiting for its call. */
interface Waiting<R> {
  readonly request: R;
  /** Takes the request's part of the reply, or a promise of its own call's reply. */
  resolve(reply: unknown): void;
  reject(error: unknown): void;
}

/** Requests per call at most: a call's reply stays small, and Redis serves other clients between calls. */
const MAX_REQUESTS = 64;
/**
 * From this many requests in a turn on, they go out as two calls at least: Redis decides the second while
 * the app reads the reply of the first (one call would leave one of them idle while the other works).
 */
const SPLIT_FROM = 8;

/**
 * Gathers the consumes of one turn of the event loop into one call (the dispatcher's 'batch', through FCALL
 * or EVALSHA), sent in that turn's check phase: one command for Redis to parse and dispatch, one reply, for every
 * request that came meanwhile — under load, the requests whose turn came with the replies the loop just
 * read. Nothing waits for a call in flight: a request goes out in the turn it came, so how long it takes is
 * the store's time only (the module's timeout starts in that same check phase). Every request stays
 * all-or-nothing and its own. Calls go out on one connection, so Redis runs them in the order they were
 * sent, and the requests of one call in their order: the requests of a key are decided in the order they
 * came. `send` makes one call and resolves with each request's part of the reply (or a promise of it).
 */
export class CallBatcher<R> {
  private waiting: Waiting<R>[] = [];
  private scheduled = false;

  constructor(private readonly send: (requests: readonly R[]) => Promise<readonly unknown[]>) {}

  /** The reply of one request (4 integers per item), as a consume of its own would have it. */
  consume(request: R): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ request, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const all = this.waiting;
    this.waiting = [];
    const calls = Math.max(Math.ceil(all.length / MAX_REQUESTS), all.length >= SPLIT_FROM ? 2 : 1);
    const size = Math.ceil(all.length / calls);
    for (let at = 0; at < all.length; at += size) this.call(all.slice(at, at + size));
  }

  private call(batch: Waiting<R>[]): void {
    this.send(batch.map((waiting) => waiting.request)).then(
      (replies) => batch.forEach((waiting, i) => waiting.resolve(replies[i])),
      (error: unknown) => batch.forEach((waiting) => waiting.reject(error)),
    );
  }
}
