// The client of the contexts consumer app: five calls in each context, one after the other, then one line of
// JSON: the app's tally (per policy, the calls its handler ran and those the limiter denied) and what the
// client was told of each call where the transport tells it: 'handled', or the code of the limiter's denial.
// `node dist/client.js <express|fastify> <http port> <tcp port>`.
import { ClientProxyFactory, Transport } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { io } from 'socket.io-client';
import { WebSocket } from 'ws';

const CALLS = 5;
const TIMEOUT_MS = 5000;
const EVENTS = ['returns', 'throws', 'acks'];

type Tally = Record<string, { handled: number; denied: number }>;

/** The code of a denial (`{ code: 'RATE_LIMITED', ... }`), else what came instead. */
function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : `unexpected: ${JSON.stringify(error)}`;
}

async function times(call: () => Promise<string>): Promise<string[]> {
  const told: string[] = [];
  for (let i = 0; i < CALLS; i++) told.push(await call());
  return told;
}

async function http(base: string): Promise<string[]> {
  return times(async () => {
    const res = await fetch(`${base}/hello`);
    return res.status === 200 ? 'handled' : codeOf(await res.json());
  });
}

async function graphql(base: string): Promise<string[]> {
  return times(async () => {
    const res = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ hello }' }),
    });
    const body = (await res.json()) as { data?: { hello?: string } | null; errors?: { extensions?: unknown }[] };
    return body.data?.hello === 'world' ? 'handled' : codeOf(body.errors?.[0]?.extensions);
  });
}

/**
 * socket.io tells of every message: the handler's answer (an event, or the ack), or Nest's `exception` event
 * (the handler's own error, or the limiter's denial).
 */
async function socketIo(port: number): Promise<Record<string, string[]>> {
  const socket = io(`http://127.0.0.1:${port}`, { transports: ['websocket'], forceNew: true, reconnection: false });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('connect_error', reject);
  });
  const ask = (event: string): Promise<string> =>
    within(
      new Promise<string>((resolve) => {
        const done = (told: string): void => {
          socket.off('exception', onException).off('returned', onAnswer);
          resolve(told);
        };
        const onException = (data: { message?: unknown }): void =>
          done(data.message === 'the handler failed' ? 'handled' : codeOf(data));
        const onAnswer = (): void => done('handled');
        socket.on('exception', onException).on('returned', onAnswer);
        socket.emit(event, 1, onAnswer);
      }),
      event,
    );
  try {
    const told: Record<string, string[]> = {};
    for (const event of EVENTS) told[`ws-${event}`] = await times(() => ask(event));
    return told;
  } finally {
    socket.disconnect();
  }
}

/**
 * `ws` clients get Nest's `exception` event from Nest 12 on only: each message is sent once the app's tally
 * shows the one before it decided.
 */
async function ws(port: number, base: string): Promise<void> {
  const client = new WebSocket(`ws://127.0.0.1:${port}/`);
  await new Promise<void>((resolve, reject) => {
    client.once('open', resolve);
    client.once('error', reject);
  });
  try {
    for (const event of EVENTS) {
      for (let i = 1; i <= CALLS; i++) {
        client.send(JSON.stringify({ event, data: i }));
        await within(decided(base, `ws-${event}`, i), event);
      }
    }
  } finally {
    client.terminate();
  }
}

/** Resolves once the app's tally counts `calls` decisions of `policy`. */
async function decided(base: string, policy: string, calls: number): Promise<void> {
  for (;;) {
    const counted = (await tallyOf(base))[policy];
    if (counted !== undefined && counted.handled + counted.denied >= calls) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function tallyOf(base: string): Promise<Tally> {
  return (await (await fetch(`${base}/tally`)).json()) as Tally;
}

async function rpc(port: number): Promise<string[]> {
  const client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
  try {
    return await times(async () => {
      try {
        await lastValueFrom(client.send<number, number[]>('sum', [1, 2]));
        return 'handled';
      } catch (error) {
        return codeOf(error);
      }
    });
  } finally {
    client.close();
  }
}

/** No call waits for ever: one the app never answers fails the run, naming it. */
function within<T>(answer: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to "${what}" within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  return Promise.race([answer, timeout]).finally(() => clearTimeout(timer));
}

async function main(): Promise<void> {
  const [platform = 'express', httpPort = '0', tcpPort = '0'] = process.argv.slice(2);
  const base = `http://127.0.0.1:${httpPort}`;
  const told: Record<string, string[]> = { http: await http(base), gql: await graphql(base) };
  if (platform === 'express') Object.assign(told, await socketIo(Number(httpPort)));
  else await ws(Number(httpPort), base);
  told.rpc = await rpc(Number(tcpPort));
  console.log(JSON.stringify({ tally: await tallyOf(base), told }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
