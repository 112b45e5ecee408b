/**
 * What a test opened and would have closed at its end, had it not failed first: closed after the file's
 * last test, so that a failing assertion before an `app.close()` fails its test and no more. Jest runs the
 * suites in its own process on 2 cores (one worker), where a connection left open keeps the whole run from
 * exiting.
 */
interface Closable {
  close(): Promise<unknown>;
}

const open = new Set<Closable>();

// Declared when a spec first imports this module, so before the spec's own hooks: Jest runs a block's
// afterAll hooks in their order, which is why close() is made idempotent below.
afterAll(async () => {
  const left = [...open];
  await Promise.all(left.map((closable) => closable.close().catch(() => undefined)));
});

/** Tracks `closable` until it is closed; its close() becomes idempotent (a second call awaits the first). */
export function closedAtTheEnd<T extends Closable>(closable: T): T {
  const close = closable.close.bind(closable);
  let closing: Promise<unknown> | undefined;
  closable.close = () => {
    open.delete(closable);
    return (closing ??= close());
  };
  open.add(closable);
  return closable;
}
