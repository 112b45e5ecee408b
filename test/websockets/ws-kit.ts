import type { AddressInfo } from 'node:net';

import type { INestApplication, LoggerService, Type } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { WsAdapter } from '@nestjs/platform-ws';
import { Test } from '@nestjs/testing';
import { io, type Socket } from 'socket.io-client';
import { WebSocket } from 'ws';

import { RATE_LIMIT_CLOCK, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { alignedStart } from '../support/time.js';
import { ChatGateway, type Message } from './gateways.js';
import { closedAtTheEnd } from '../support/leftovers.js';

/** socket.io (IoAdapter, Nest's default) with socket.io-client, or `ws` (WsAdapter) with the `ws` client. */
export type Platform = 'socket.io' | 'ws';

export interface WsApp {
  readonly app: INestApplication;
  readonly clock: FakeClock;
  readonly port: number;
  connect(options?: ConnectOptions): Promise<TestClient>;
  close(): Promise<void>;
}

/**
 * A Nest app (Express) with RateLimitModule and `gateways`, on a loopback port, with the limiter's clock a
 * FakeClock at a minute's start (so a 1-minute fixed window's denial waits exactly 60 s). For 'ws' the app uses
 * WsAdapter. Every client it connected is closed by close().
 */
export async function createWsApp(
  platform: Platform,
  options: RateLimitModuleOptions,
  { gateways = [ChatGateway], logger }: { gateways?: Type[]; logger?: LoggerService } = {},
): Promise<WsApp> {
  const clock = new FakeClock(alignedStart(60_000) + 60_000);
  const moduleRef = await Test.createTestingModule({ imports: [RateLimitModule.forRoot(options)], providers: gateways })
    .overrideProvider(RATE_LIMIT_CLOCK)
    .useValue(clock)
    .compile();
  const app = closedAtTheEnd(moduleRef.createNestApplication(new ExpressAdapter(), { logger: logger ?? false }));
  if (platform === 'ws') app.useWebSocketAdapter(new WsAdapter(app));
  try {
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  const { port } = app.getHttpServer().address() as AddressInfo;
  const clients: TestClient[] = [];
  return {
    app,
    clock,
    port,
    async connect(connectOptions = {}) {
      const client = await connect(platform, port, connectOptions);
      clients.push(client);
      return client;
    },
    async close() {
      clients.forEach((client) => client.close());
      await app.close();
    },
  };
}

export interface ConnectOptions {
  /** Headers of the handshake (the upgrade request, or socket.io's first polling request). */
  readonly headers?: Record<string, string>;
  /** A user for the gateway to attach at connection. */
  readonly user?: string;
  /** socket.io only: default ['websocket']. */
  readonly transports?: ('websocket' | 'polling')[];
  /** Path of the ws server, default '/'. */
  readonly path?: string;
}

export interface TestClient {
  /** Every message received, in order. */
  readonly received: Message[];
  send(event: string, data?: unknown): void;
  /** Resolves once `count` messages have come in all; rejects after `timeoutMs`, saying what came. */
  waitFor(count: number, timeoutMs?: number): Promise<Message[]>;
  isOpen(): boolean;
  close(): void;
}

/** Bound of every connection attempt. */
const CONNECT_TIMEOUT_MS = 5000;

/** Connects a client of `platform` to a server on 127.0.0.1:`port`, resolved once the connection is open. */
export async function connect(platform: Platform, port: number, options: ConnectOptions = {}): Promise<TestClient> {
  const received: Message[] = [];
  const waiters: (() => void)[] = [];
  const push = (message: Message): void => {
    received.push(message);
    [...waiters].forEach((wake) => wake());
  };
  let send: (event: string, data: unknown) => void;
  let isOpen: () => boolean;
  let close: () => void;
  if (platform === 'socket.io') {
    const socket: Socket = io(`http://127.0.0.1:${port}`, {
      transports: options.transports ?? ['websocket'],
      extraHeaders: options.headers,
      auth: options.user === undefined ? {} : { user: options.user },
      forceNew: true,
      reconnection: false,
      timeout: CONNECT_TIMEOUT_MS,
    });
    socket.onAny((event: string, data: unknown) => push({ event, data }));
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('connect_error', (error) => reject(new Error(`socket.io client to port ${port}: ${error.message}`)));
    });
    send = (event, data) => socket.emit(event, data);
    isOpen = () => socket.connected;
    close = () => socket.disconnect();
  } else {
    const query = options.user === undefined ? '' : `?user=${encodeURIComponent(options.user)}`;
    const ws = new WebSocket(`ws://127.0.0.1:${port}${options.path ?? '/'}${query}`, {
      headers: options.headers,
      handshakeTimeout: CONNECT_TIMEOUT_MS,
    });
    ws.on('message', (raw) => push(JSON.parse(String(raw)) as Message));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', (error) => reject(new Error(`ws client to port ${port}: ${error.message}`)));
    });
    send = (event, data) => ws.send(JSON.stringify({ event, data }));
    isOpen = () => ws.readyState === WebSocket.OPEN;
    close = () => ws.terminate();
  }
  return {
    received,
    send: (event, data = null) => send(event, data),
    waitFor(count, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (received.length < count) return;
          clearTimeout(timer);
          waiters.splice(waiters.indexOf(check), 1);
          resolve(received.slice(0, count));
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(check), 1);
          const events = received.map((m) => m.event).join(', ');
          reject(new Error(`expected ${count} messages within ${timeoutMs} ms, got ${received.length}: ${events}`));
        }, timeoutMs);
        waiters.push(check);
        check();
      });
    },
    isOpen: () => isOpen(),
    close: () => close(),
  };
}

/** The `exception` payload of a denial, exactly. */
export const denied = (policy: string, retryAfter: number) => ({
  status: 'error',
  code: 'RATE_LIMITED',
  message: expect.stringContaining(`"${policy}"`),
  policy,
  retryAfter,
});

/** The `exception` payload of a fail-closed outage, exactly. */
export const unavailable = (policy: string, retryAfter: number) => ({
  status: 'error',
  code: 'RATE_LIMIT_UNAVAILABLE',
  message: expect.stringContaining(`"${policy}"`),
  policy,
  retryAfter,
});

/** Sends `event` and waits for the one answer (handled or exception). */
export async function ask(client: TestClient, event: string, data: unknown = null): Promise<Message> {
  const count = client.received.length + 1;
  client.send(event, data);
  return nth(await client.waitFor(count), count - 1);
}
