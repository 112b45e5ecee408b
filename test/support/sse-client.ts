import { type IncomingMessage, request as httpRequest } from 'node:http';

/** A server-sent event as a client reads it: its `event` field when it has one, and its data. */
export interface SseEvent {
  event?: string;
  data: string;
}

/** A stream of server-sent events read one at a time, so that a test can act between two of them. */
export interface SseClient {
  /** Resolves with the next event; rejects when the stream ends or fails first. */
  next(): Promise<SseEvent>;
  /** The response's status and headers, known once `next()` has resolved once. */
  readonly response: Promise<IncomingMessage>;
  /** Resolves when the server has ended the stream. */
  readonly ended: Promise<void>;
  /** Hangs up, as a client that goes away. */
  close(): void;
}

/** Parses one block of an event stream; comments (`:` lines) and `id` are left out. */
function parseEvent(block: string): SseEvent | undefined {
  const event: SseEvent = { data: '' };
  const data: string[] = [];
  for (const line of block.split('\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const [field, value] = [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, '')];
    if (field === 'event') event.event = value;
    if (field === 'data') data.push(value);
  }
  if (data.length === 0) return undefined;
  event.data = data.join('\n');
  return event;
}

/** Opens `GET path` on a loopback port and reads its event stream. */
export function openSse(port: number, path: string, headers: Record<string, string> = {}): SseClient {
  const events: SseEvent[] = [];
  const waiters: { resolve: (e: SseEvent) => void; reject: (error: Error) => void }[] = [];
  let failure: Error | undefined;
  let buffer = '';
  const fail = (error: Error) => {
    failure ??= error;
    for (const waiter of waiters.splice(0)) waiter.reject(failure);
  };
  const req = httpRequest({ host: '127.0.0.1', port, path, headers: { accept: 'text/event-stream', ...headers } });
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  const ended = response.then(
    (res) =>
      new Promise<void>((resolve) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const event = parseEvent(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
            if (event === undefined) continue;
            const waiter = waiters.shift();
            if (waiter === undefined) events.push(event);
            else waiter.resolve(event);
          }
        });
        res.once('close', () => {
          fail(new Error(`the stream ended (status ${res.statusCode ?? '?'})`));
          resolve();
        });
      }),
  );
  req.once('error', (error) => fail(error));
  req.end();
  return {
    next: () => {
      const event = events.shift();
      if (event !== undefined) return Promise.resolve(event);
      if (failure !== undefined) return Promise.reject(failure);
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
    response,
    ended,
    close: () => req.destroy(),
  };
}
