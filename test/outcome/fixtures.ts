import type { Socket } from 'node:net';

import {
  BadRequestException,
  Body,
  type CanActivate,
  Controller,
  type ExecutionContext,
  Injectable,
  Post,
  Req,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common';

import { RateLimit, type RateLimitOutcome, type RateLimitPolicy } from '../../lib/index.js';

/** A login attempt: 'right' succeeds, a missing password is a 400, 'crash' throws a plain Error (500). */
export interface Credentials {
  account?: string;
  password?: string;
}

/** Every policy of these tests is keyed by the account named in the body (HTTP) or the arguments. */
export const accountOf = (credentials: Credentials | undefined): string | undefined =>
  typeof credentials?.account === 'string' ? `account:${credentials.account}` : undefined;

const httpAccount = (ctx: ExecutionContext): string | undefined =>
  accountOf(ctx.switchToHttp().getRequest<{ body?: Credentials }>().body);

/** What a login handler does with the credentials, in every context. */
export function checkCredentials(credentials: Credentials): { ok: true } {
  if (credentials.password === undefined) throw new BadRequestException('password missing');
  if (credentials.password === 'crash') throw new Error('the user directory is down');
  if (credentials.password !== 'right') throw new UnauthorizedException('bad credentials');
  return { ok: true };
}

export const FIFTEEN_MINUTES_MS = 15 * 60_000;

/** The classic: 5 failed logins per account per 15 minutes; successful ones are given back. */
export const LOGIN: RateLimitPolicy = {
  name: 'login',
  algorithm: 'sliding-window-log',
  limit: 5,
  window: '15m',
  key: httpAccount,
  count: 'failed',
};

/** An Express or Fastify request, for the socket it came on. */
export interface WithSocket {
  readonly socket?: Socket;
}

/** Handlers wait here, when a test asks, until the test lets them go on. */
export class Holds {
  private readonly held = new Map<string, { reached: (socket?: Socket) => void; released: Promise<void> }>();

  /**
   * Holds the next handler that passes `account`: `reached` resolves, with the request's socket, once the
   * handler waits; `release()` lets it go on.
   */
  hold(account: string): { reached: Promise<Socket | undefined>; release(): void } {
    let reached!: (socket?: Socket) => void;
    let release!: () => void;
    const reachedPromise = new Promise<Socket | undefined>((resolve) => (reached = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    this.held.set(account, { reached, released });
    return { reached: reachedPromise, release };
  }

  async pass(account: string | undefined, req?: WithSocket): Promise<void> {
    const hold = account === undefined ? undefined : this.held.get(account);
    if (hold === undefined) return;
    this.held.delete(account as string);
    hold.reached(req?.socket);
    await hold.released;
  }
}

export const holds = new Holds();

/** What the count function of `/auth/observed` was shown, per account. */
export const observed = new Map<string, RateLimitOutcome[]>();

/** A guard that checks the password itself, as Passport's LocalAuthGuard does: a refusal after admission. */
@Injectable()
class CredentialsGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const body = ctx.switchToHttp().getRequest<{ body?: Credentials }>().body ?? {};
    if (body.password !== 'right') throw new UnauthorizedException('bad credentials');
    return true;
  }
}

/** Sets `req.user` from the `x-user` header, after the global guard (so user-keyed policies wait for it). */
@Injectable()
class HeaderAuthGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; user?: unknown }>();
    if (req.headers['x-user'] === undefined) throw new UnauthorizedException('no user');
    req.user = { id: req.headers['x-user'] };
    return true;
  }
}

const byAccount = (name: string, limit: number, extra: Partial<RateLimitPolicy>): RateLimitPolicy =>
  ({ name, algorithm: 'fixed-window', limit, window: '1h', key: httpAccount, ...extra }) as RateLimitPolicy;

@Controller('auth')
export class AuthController {
  @Post('login')
  @RateLimit(LOGIN)
  async login(@Body() body: Credentials, @Req() req: WithSocket) {
    await holds.pass(body.account, req);
    return checkCredentials(body);
  }

  /** 3 password-reset mails per hour: an attempt that fails (unknown account, bad token) costs nothing. */
  @Post('reset')
  @RateLimit(byAccount('reset', 3, { count: 'succeeded' }))
  async reset(@Body() body: Credentials, @Req() req: WithSocket) {
    await holds.pass(body.account, req);
    return checkCredentials(body);
  }

  /** Only wrong passwords count: a malformed request (400) or a crash (500) is given back. */
  @Post('strict')
  @RateLimit(byAccount('strict', 3, { count: ({ status }) => status === 401 }))
  strict(@Body() body: Credentials) {
    return checkCredentials(body);
  }

  /** Records what its count function is shown; counts what threw. */
  @Post('observed')
  @RateLimit(
    byAccount('observed', 10, {
      count: (outcome) => {
        const body = outcome.context.switchToHttp().getRequest<{ body: Credentials }>().body;
        observed.set(body.account as string, [...(observed.get(body.account as string) ?? []), outcome]);
        return 'error' in outcome;
      },
    }),
  )
  observed(@Body() body: Credentials) {
    return checkCredentials(body);
  }

  /** A count function that throws on wrong passwords (and refunds the others). */
  @Post('throwing-count')
  @RateLimit(
    byAccount('throwing-count', 10, {
      count: ({ status }) => {
        if (status === 401) throw new Error('count function bug');
        return false;
      },
    }),
  )
  throwingCount(@Body() body: Credentials) {
    return checkCredentials(body);
  }

  /** The password is checked by a route guard, after the global guard admitted the attempt. */
  @Post('guarded')
  @UseGuards(CredentialsGuard)
  @RateLimit(byAccount('guarded', 5, { count: 'failed' }))
  guarded() {
    return { ok: true };
  }

  /** A per-IP limit of everything beside a per-account limit of successes. */
  @Post('pair')
  @RateLimit([
    { name: 'pair-ip', algorithm: 'fixed-window', limit: 3, window: '1h', key: 'ip' },
    byAccount('pair-ok', 10, { count: 'succeeded' }),
  ])
  pair(@Body() body: Credentials) {
    return checkCredentials(body);
  }

  /**
   * Successes per account decided by the global guard, beside a per-user limit that waits for the route's
   * authentication (decided by the interceptor, which refunds the account's charge when it denies).
   */
  @Post('deferred')
  @UseGuards(HeaderAuthGuard)
  @RateLimit([
    byAccount('deferred-ok', 10, { count: 'succeeded' }),
    { name: 'deferred-user', algorithm: 'fixed-window', limit: 1, window: '1h', key: 'user' },
  ])
  deferred(@Body() body: Credentials) {
    return checkCredentials(body);
  }

  /** A fixed window of one minute, for a login whose outcome comes in the next window. */
  @Post('window')
  @RateLimit(byAccount('window', 3, { window: '1m', count: 'failed' }))
  async window(@Body() body: Credentials) {
    await holds.pass(body.account);
    return checkCredentials(body);
  }
}
