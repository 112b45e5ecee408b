import { Agent, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { Controller, Get, type INestApplication, type ExecutionContext } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';

import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { closedAtTheEnd } from './leftovers.js';

/**
 * GCRA, 5 per hour per key: the policy the overload tests flood. An hour, so that what refills during a flood
 * (however long a loaded machine makes it) stays below one request: a key may pass 6 at most.
 */
export const OVERLOAD_POLICY = { limit: 5, windowMs: 3_600_000 } as const;

/** The flood of the overload tests: requests kept in flight, for how long, on how many keys. */
export const FLOOD = { inFlight: 1200, durationMs: 10_500, keys: 1500 } as const;

/**
 * The flood on a healthy store: every key is offered more than it may pass (6: the burst of 5, and less than
 * one more refilled in a flood of up to an hour), so the flood goes on past its duration until 7 per key were
 * sent (60 s at most). A machine whose cores other suites shared sent only 5,506 in 10.5 s, and no key saw a
 * 429; with a per-minute policy a longer flood refilled as fast as it offered.
 */
export const HEALTHY_FLOOD = { ...FLOOD, minSent: 7 * FLOOD.keys, maxDurationMs: 60_000 } as const;

const keyOf = (ctx: ExecutionContext): string | undefined => {
  const key = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-key'];
  return key === undefined ? undefined : `k:${key}`;
};

/**
 * What a handler of a real app spends of CPU per request (rendering, validation), and now and then a heavy one
 * (a large report, a garbage collection): the saturated loop turns slowly, and sometimes stalls for longer
 * than the store timeout while replies that have already arrived wait to be read.
 */
const HANDLER_WORK_MS = 0.2;
const HEAVY_EVERY = 500;
const HEAVY_WORK_MS = 150;
let handled = 0;

function work(): string {
  const until = performance.now() + (++handled % HEAVY_EVERY === 0 ? HEAVY_WORK_MS : HANDLER_WORK_MS);
  while (performance.now() < until);
  return 'ok';
}

/**
 * GET /open fails open, GET /closed fails closed; both GCRA 5 per hour keyed by the `x-key` header. Each
 * handler keeps the CPU busy for a moment, as real handlers do, so a saturated loop turns slowly.
 */
@Controller()
export class OverloadController {
  @Get('open')
  @RateLimit({ name: 'open', algorithm: 'gcra', limit: 5, window: '1h', key: keyOf, failMode: 'open' })
  open() {
    return work();
  }

  @Get('closed')
  @RateLimit({ name: 'closed', algorithm: 'gcra', limit: 5, window: '1h', key: keyOf, failMode: 'closed' })
  closed() {
    return work();
  }
}

/** A real Express app on a loopback port, with the system clock (the test runs for seconds of real time). */
export async function startOverloadApp(
  options: RateLimitModuleOptions,
): Promise<{ app: INestApplication; port: number; serverSide: { slowestMs: number } }> {
  const serverSide = { slowestMs: 0 };
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options)],
    controllers: [OverloadController],
  }).compile();
  const app = closedAtTheEnd(moduleRef.createNestApplication(new ExpressAdapter(), { logger: false }));
  // Server-side time of every answer, from the request's arrival to its last byte.
  app.use((req: unknown, res: ServerResponse, next: () => void) => {
    const at = performance.now();
    res.once('finish', () => {
      serverSide.slowestMs = Math.max(serverSide.slowestMs, performance.now() - at);
    });
    next();
  });
  await app.init();
  const server = app.getHttpServer() as Server;
  // Keep-alive sockets outlive the flood (no resets when the client reuses one), and the accept backlog
  // holds every connection the flood opens at once (no SYN retransmits of seconds).
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
  const address = server.address() as AddressInfo;
  return { app, port: address.port, serverSide };
}

export interface FloodResult {
  sent: number;
  byStatus: Map<number, number>;
  /** Admitted (200) per key. */
  admitted: Map<string, number>;
  /** Slowest answer, in ms. */
  slowestMs: number;
  /** Answers slower than 1 s. */
  slow: number;
  durationMs: number;
  /** Requests that failed without an HTTP answer (socket errors). */
  errors: number;
}

export interface FloodOptions {
  inFlight: number;
  /** The flood lasts at least this long... */
  durationMs: number;
  keys: number;
  /** ...and until this many requests were sent, however slow the machine (CI shares its cores), */
  minSent?: number;
  /** ...but never longer than this (the test's precondition on `sent` then fails and says so). */
  maxDurationMs?: number;
}

/**
 * Keeps `inFlight` requests open against the app, from this same process (so the app is saturated by its own
 * traffic), for `durationMs` and at least `minSent` requests, spreading them over `keys` keys.
 */
export function flood(
  port: number,
  path: string,
  { inFlight, durationMs, keys, minSent = 0, maxDurationMs = 3 * durationMs }: FloodOptions,
): Promise<FloodResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
  const result: FloodResult = {
    sent: 0,
    byStatus: new Map(),
    admitted: new Map(),
    slowestMs: 0,
    slow: 0,
    durationMs: 0,
    errors: 0,
  };
  const started = performance.now();
  let open = 0;
  return new Promise((resolve) => {
    const finish = (): void => {
      if (open > 0) return;
      result.durationMs = performance.now() - started;
      agent.destroy();
      resolve(result);
    };
    const send = (): void => {
      const elapsedMs = performance.now() - started;
      if (elapsedMs >= maxDurationMs || (elapsedMs >= durationMs && result.sent >= minSent)) return finish();
      const key = String(result.sent % keys);
      result.sent++;
      open++;
      const at = performance.now();
      const done = (status: number | undefined): void => {
        open--;
        const tookMs = performance.now() - at;
        result.slowestMs = Math.max(result.slowestMs, tookMs);
        if (tookMs > 1000) result.slow++;
        if (status === undefined) result.errors++;
        else {
          result.byStatus.set(status, (result.byStatus.get(status) ?? 0) + 1);
          if (status === 200) result.admitted.set(key, (result.admitted.get(key) ?? 0) + 1);
        }
        send();
      };
      const req = request({ host: '127.0.0.1', port, path, agent, headers: { 'x-key': key } }, (res) => {
        res.resume();
        res.once('end', () => done(res.statusCode));
      });
      req.once('error', () => done(undefined));
      req.end();
    };
    for (let i = 0; i < inFlight; i++) send();
  });
}

/** Most a GCRA key may be admitted in `durationMs`: the burst, plus what the rate refills meanwhile. */
export function gcraBound(durationMs: number): number {
  return OVERLOAD_POLICY.limit + Math.ceil((durationMs * OVERLOAD_POLICY.limit) / OVERLOAD_POLICY.windowMs);
}
