/**
 * A dependency of fixed capacity (a database pool, a downstream service): `concurrency` requests served at once,
 * the rest waiting in one FIFO queue before them, each served for the time `serviceUs` gives when it starts. It
 * knows nothing of clients: a request whose client has left is still served in its turn.
 * @example const d = new Dependency<number>(10, () => 20_000, (atUs, id) => events.push(atUs, id)); d.submit(1, 0)
 */
export class Dependency<T> {
  private busy = 0;
  private waiting: T[] = [];
  private head = 0;

  constructor(
    readonly concurrency: number,
    private readonly serviceUs: (request: T, nowUs: number) => number,
    private readonly served: (atUs: number, request: T) => void,
  ) {}

  /** Requests waiting for a turn, not yet served. */
  get queued(): number {
    return this.waiting.length - this.head;
  }

  /** Requests being served now. */
  get serving(): number {
    return this.busy;
  }

  /** A request reaches the dependency at `nowUs`: served at once when a turn is free, else queued. */
  submit(request: T, nowUs: number): void {
    if (this.busy < this.concurrency) this.start(request, nowUs);
    else this.waiting.push(request);
  }

  /** A request's service ended at `nowUs`: the next one waiting starts. */
  finish(nowUs: number): void {
    this.busy--;
    if (this.head === this.waiting.length) return;
    const next = this.waiting[this.head++] as T;
    // Give the taken part of the queue back now and then, not on every turn.
    if (this.head > 4096 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    this.start(next, nowUs);
  }

  private start(request: T, nowUs: number): void {
    this.busy++;
    this.served(nowUs + Math.max(1, Math.round(this.serviceUs(request, nowUs))), request);
  }
}
