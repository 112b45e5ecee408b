import './mercurius-under-jest.js';

import type { IncomingMessage } from 'node:http';

import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import type { INestApplication, Provider } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import type { MercuriusDriverConfig } from '@nestjs/mercurius';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { RATE_LIMIT_CLOCK, RateLimitModule, type RateLimitModuleOptions, RateLimitService } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from './harness.js';
import { TEST_START_MS } from './time.js';
import { closedAtTheEnd } from './leftovers.js';

/** Apollo Server on Express (@nestjs/apollo) and Mercurius on Fastify (@nestjs/mercurius). */
export type GraphQLDriverName = 'apollo' | 'mercurius';
export const GRAPHQL_DRIVERS: GraphQLDriverName[] = ['apollo', 'mercurius'];

export interface GraphQLAppOptions {
  readonly resolvers: Provider[];
  /** The limiter's options; `false` leaves RateLimitModule out (to drive the adapter by hand). */
  readonly rateLimit?: RateLimitModuleOptions | false;
  /** GraphQLModule's `fieldResolverEnhancers`; needed for @RateLimit on field resolvers. */
  readonly fieldResolverEnhancers?: ('guards' | 'interceptors' | 'filters')[];
  /** Sets `req.user = { id: <x-user header> }` (or `{ sub: <x-sub> }`) before GraphQL runs, as Passport would. */
  readonly authenticate?: boolean;
  readonly clock?: FakeClock;
  /** Serves subscriptions over WebSocket at /graphql (graphql-transport-ws protocol). */
  readonly subscriptions?: boolean;
}

export interface GraphQLError {
  message: string;
  path?: (string | number)[];
  locations?: unknown;
  extensions?: Record<string, unknown>;
}

export interface GraphQLResponse {
  status: number;
  headers: Record<string, string | undefined>;
  data: Record<string, unknown> | null | undefined;
  errors: GraphQLError[] | undefined;
}

export interface GraphQLTestApp {
  readonly app: INestApplication;
  /** ws://127.0.0.1:<port>/graphql */
  readonly wsUrl: string;
  readonly clock: FakeClock;
  /** The app's RateLimitService (throws when the app has no RateLimitModule). */
  service(): RateLimitService;
  /** POSTs one operation to /graphql (a separate HTTP request each call). */
  gql(
    query: string,
    options?: { headers?: Record<string, string>; variables?: Record<string, unknown> },
  ): Promise<GraphQLResponse>;
  close(): Promise<void>;
}

interface Authenticated {
  headers: IncomingMessage['headers'];
  user?: { id?: string; sub?: string };
}

function authenticate(req: Authenticated): void {
  const id = req.headers['x-user'];
  const sub = req.headers['x-sub'];
  if (typeof id === 'string') req.user = { id };
  else if (typeof sub === 'string') req.user = { sub };
}

async function graphqlModule(driver: GraphQLDriverName, options: GraphQLAppOptions) {
  const fieldResolverEnhancers = options.fieldResolverEnhancers ?? [];
  if (driver === 'apollo') {
    return GraphQLModule.forRoot<ApolloDriverConfig>({
      driver: ApolloDriver,
      autoSchemaFile: true,
      graphiql: false,
      // Apollo adds a stack trace to every error's extensions outside production; the tests check them exactly.
      includeStacktraceInErrorResponses: false,
      fieldResolverEnhancers,
      ...(options.subscriptions === true ? { subscriptions: { 'graphql-ws': true } } : {}),
    });
  }
  // Loaded here, not imported above: see mercurius-under-jest.ts.
  const { MercuriusDriver } = await import('@nestjs/mercurius');
  return GraphQLModule.forRoot<MercuriusDriverConfig>({
    driver: MercuriusDriver,
    autoSchemaFile: true,
    graphiql: false,
    fieldResolverEnhancers,
    ...(options.subscriptions === true ? { subscription: true } : {}),
  });
}

/**
 * Compiles and starts (init, then listen on 127.0.0.1) a Nest app serving GraphQL on /graphql with the rate
 * limiter's clock replaced by a FakeClock. Rejects as the app's start does (e.g. on an invalid policy).
 */
export async function startGraphQLApp(driver: GraphQLDriverName, options: GraphQLAppOptions): Promise<GraphQLTestApp> {
  const clock = options.clock ?? new FakeClock(TEST_START_MS);
  const moduleRef = await Test.createTestingModule({
    imports: [
      ...(options.rateLimit === false ? [] : [RateLimitModule.forRoot(options.rateLimit ?? {})]),
      await graphqlModule(driver, options),
    ],
    providers: options.resolvers,
  })
    .overrideProvider(RATE_LIMIT_CLOCK)
    .useValue(clock)
    .compile();
  const app = closedAtTheEnd(
    moduleRef.createNestApplication(driver === 'apollo' ? new ExpressAdapter() : new FastifyAdapter(), {
      logger: false,
    }),
  );
  if (options.authenticate === true) {
    if (driver === 'apollo') {
      app.use((req: Authenticated, _res: unknown, next: () => void) => {
        authenticate(req);
        next();
      });
    } else {
      const fastify = app.getHttpAdapter().getInstance() as {
        addHook(name: 'onRequest', hook: (req: Authenticated, reply: unknown, done: () => void) => void): void;
      };
      fastify.addHook('onRequest', (req, _reply, done) => {
        authenticate(req);
        done();
      });
    }
  }
  try {
    await app.init();
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  const server = app.getHttpServer() as Parameters<typeof request>[0];
  const address = (app.getHttpServer() as { address(): { port: number } }).address();
  return {
    app,
    wsUrl: `ws://127.0.0.1:${address.port}/graphql`,
    clock,
    service: () => app.get(RateLimitService),
    async gql(query, { headers = {}, variables } = {}) {
      const res = await request(server).post('/graphql').set(headers).send({ query, variables });
      const body = res.body as { data?: Record<string, unknown> | null; errors?: GraphQLError[] };
      return {
        status: res.status,
        headers: res.headers as Record<string, string | undefined>,
        data: body.data,
        errors: body.errors,
      };
    },
    close: () => app.close(),
  };
}

/** The errors of a response by their path (`'books.1.summary'`), for exact assertions. */
export function errorsByPath(res: GraphQLResponse): Record<string, GraphQLError> {
  return Object.fromEntries((res.errors ?? []).map((e) => [(e.path ?? []).join('.'), e]));
}

/** The RateLimit-Policy names of a response, in order. */
export function policyNames(res: GraphQLResponse): string[] {
  return (res.headers['ratelimit-policy'] ?? '')
    .split(', ')
    .filter(Boolean)
    .map((item) => nth(item.split(';'), 0).replaceAll('"', ''));
}
