import {
  BadRequestException,
  Body,
  Controller,
  type ExecutionContext,
  HttpCode,
  Post,
  UnauthorizedException,
} from '@nestjs/common';

import { Criticality, RateLimit } from '../lib/index.js';

interface LoginBody {
  username?: unknown;
  password?: unknown;
}

/** The demo's credential check: this password is valid for every username. */
export const DEMO_PASSWORD = 'correct-horse';

/**
 * The account a login attempt targets, normalised the way accounts are looked up (trimmed, lower case), so
 * `Alice` and `alice ` share one counter. Undefined (policy skipped) when there is no username: the request is
 * still counted per IP, and the handler answers 400.
 */
function targetAccount(ctx: ExecutionContext): string | undefined {
  const { username } = ctx.switchToHttp().getRequest<{ body?: LoginBody }>().body ?? {};
  if (typeof username !== 'string' || username.trim() === '') return undefined;
  return `account:${username.trim().toLowerCase()}`;
}

@Controller('auth')
export class AuthController {
  /**
   * Two exact limits against credential stuffing, both failing closed (no login at all beats unlimited
   * guessing while the store is down), both counting failed attempts only (`count: 'failed'`): 5 per targeted
   * account, whoever sends them, and 20 per client IP, whatever account they target. Every attempt is charged
   * before the password is checked, so concurrent guesses cannot slip past the limit; a successful login gets
   * its unit back once its response is sent. So a user who logs in often never locks themselves out, nor do
   * the many users of one office behind one NAT address; guessing still costs a unit per wrong password.
   * A 400 (no username) is a failure too: it counts per IP.
   */
  @Post('login')
  @HttpCode(200)
  @Criticality('critical') // a user who cannot log in during an incident cannot do anything else
  @RateLimit([
    {
      name: 'login-account',
      algorithm: 'sliding-window-log',
      limit: 5,
      window: '15m',
      key: targetAccount,
      failMode: 'closed',
      count: 'failed',
    },
    {
      name: 'login-ip',
      algorithm: 'sliding-window-log',
      limit: 20,
      window: '15m',
      key: 'ip',
      failMode: 'closed',
      count: 'failed',
    },
  ])
  login(@Body() body: LoginBody = {}): { token: string } {
    const { username, password } = body;
    if (typeof username !== 'string' || username.trim() === '' || typeof password !== 'string') {
      throw new BadRequestException('username and password are required strings');
    }
    if (password !== DEMO_PASSWORD) throw new UnauthorizedException('Invalid username or password');
    return { token: `demo-token-${username.trim().toLowerCase()}` };
  }
}
