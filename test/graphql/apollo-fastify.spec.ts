import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { GraphQLModule } from '@nestjs/graphql';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { RATE_LIMIT_CLOCK, RateLimitModule } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { CapturingLogger } from '../support/log-lines.js';
import { alignedStart } from '../support/time.js';
import { KeysResolver } from './fixtures.js';

/** Apollo on Fastify: Nest's context has only `req`, so headers need the app to put `reply` in its context. */
describe('Apollo on Fastify', () => {
  it.each([
    ['without reply in the context', false],
    ['with reply in the context', true],
  ])('%s', async (_title, withReply) => {
    const logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({}),
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          autoSchemaFile: true,
          graphiql: false,
          includeStacktraceInErrorResponses: false,
          ...(withReply ? { context: (req: unknown, reply: unknown) => ({ req, reply }) } : {}),
        }),
      ],
      providers: [KeysResolver],
    })
      .overrideProvider(RATE_LIMIT_CLOCK)
      .useValue(new FakeClock(alignedStart(60_000) + 60_000))
      .compile();
    const app = moduleRef.createNestApplication(new FastifyAdapter(), { logger });
    try {
      await app.init();
      await app.listen(0, '127.0.0.1');
      const post = () => request(app.getHttpServer()).post('/graphql').send({ query: '{ whoami }' });
      const allowed = await post();
      const denied = await post();
      expect(allowed.body).toEqual({ data: { whoami: 'ok' } });
      expect(denied.body.data).toEqual({ whoami: null });
      expect(denied.body.errors[0].extensions).toEqual({ code: 'RATE_LIMITED', policy: 'by-ip', retryAfter: 60 });
      if (withReply) {
        expect(allowed.headers['ratelimit']).toBe('"by-ip";r=0;t=60');
        expect(denied.headers['retry-after']).toBe('60');
        expect(logger.warnings.filter((w) => w.includes('no HTTP response'))).toEqual([]);
      } else {
        expect([allowed.headers['ratelimit'], denied.headers['retry-after']]).toEqual([undefined, undefined]);
        // Said once, naming the resolver and the fix.
        expect(logger.warnings.filter((w) => w.includes('no HTTP response'))).toEqual([
          expect.stringMatching(/KeysResolver\.whoami .*\(req, reply\) => \(\{ req, reply \}\)/),
        ]);
      }
    } finally {
      await app.close();
    }
  });
});
