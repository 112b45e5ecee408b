import type { AddressInfo } from 'node:net';

import type { INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { io, type Socket } from 'socket.io-client';
import request from 'supertest';

import { RATE_LIMIT_CLOCK } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { AppModule } from '../../sample-app/app.module.js';
import { alignedStart } from '../support/time.js';

/** Resolves with the next `event` of a socket.io client, or rejects after `timeoutMs`. */
function next<T>(socket: Socket, event: string, timeoutMs = 2000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} within ${timeoutMs} ms`)), timeoutMs);
    socket.once(event, (payload: T) => {
      clearTimeout(timer);
      resolve(payload);
    });
  });
}

describe('the sample app beyond HTTP routes (the README walkthrough)', () => {
  let app: INestApplication;
  let port: number;
  const savedRedisUrl = process.env.REDIS_URL;

  beforeAll(async () => {
    delete process.env.REDIS_URL; // the in-memory store, whatever the environment
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(RATE_LIMIT_CLOCK)
      .useValue(new FakeClock(alignedStart(60_000)))
      .compile();
    app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as AddressInfo).port;
  });
  afterAll(async () => {
    await app.close();
    if (savedRedisUrl !== undefined) process.env.REDIS_URL = savedRedisUrl;
  });

  const graphql = (query: string) => request(app.getHttpServer()).post('/graphql').send({ query });

  it('POST /graphql: greetings cost their count; past 30 a GraphQL error for the field, other fields resolve', async () => {
    const first = await graphql('{ hello greetings(count: 25) }');
    expect(first.status).toBe(200);
    expect(first.body.data.greetings).toHaveLength(25);
    expect(first.headers['ratelimit-policy']).toBe('"per-user";q=100;w=60, "graphql-greetings";q=30;w=60');

    const second = await graphql('{ hello(name: "alice") greetings(count: 10) }');
    expect(second.status).toBe(200);
    expect(second.body.data).toEqual({ hello: 'hello, alice', greetings: null });
    expect(second.body.errors).toHaveLength(1);
    expect(second.body.errors[0]).toEqual({
      message: 'Rate limit "graphql-greetings" exceeded; retry in 10 s',
      locations: [{ line: 1, column: 24 }],
      path: ['greetings'],
      extensions: { code: 'RATE_LIMITED', policy: 'graphql-greetings', retryAfter: 10 },
    });
    expect(second.headers['retry-after']).toBe('10');
  });

  it('socket.io chat: 5 messages at once, then the next gets the exception event; the connection stays open', async () => {
    const socket = io(`http://127.0.0.1:${port}`, { transports: ['websocket'], forceNew: true });
    try {
      await next(socket, 'connect');
      const answers: string[] = [];
      const fiveAnswers = new Promise<void>((resolve) =>
        socket.on('chat', (text: string) => {
          answers.push(text);
          if (answers.length === 5) resolve();
        }),
      );
      const denied = next<object>(socket, 'exception');
      for (let i = 0; i < 6; i++) socket.emit('chat', `message ${i}`);
      expect(await denied).toEqual({
        status: 'error',
        code: 'RATE_LIMITED',
        message: 'Rate limit "chat" exceeded; retry in 2 s',
        policy: 'chat',
        retryAfter: 2,
      });
      await fiveAnswers;
      expect(answers).toEqual(['message 0', 'message 1', 'message 2', 'message 3', 'message 4']);
      expect(socket.connected).toBe(true);
    } finally {
      socket.close();
    }
  });
});
