import {
  type CanActivate,
  createParamDecorator,
  type ExecutionContext,
  Injectable,
  UnauthorizedException,
} from '@nestjs/common';

/**
 * Who is calling: set on `req.user` by ApiKeyGuard. The rate limiter keys `key: 'user'` policies by `id`; the
 * `tenant` is the customer (a company) the user belongs to, whose waiters take turns for the AI provider's budget.
 */
export interface AuthUser {
  id: string;
  plan: 'free' | 'pro';
  tenant: string;
}

/**
 * The demo's whole user database: API key → user. A real app looks keys up (hashed) in its own store.
 * The keys are public on purpose: the README's curl walkthrough uses them.
 */
export const API_KEYS: ReadonlyMap<string, AuthUser> = new Map([
  ['demo-key-alice', { id: 'alice', plan: 'free', tenant: 'acme' }],
  ['demo-key-carol', { id: 'carol', plan: 'free', tenant: 'acme' }],
  ['demo-key-bob', { id: 'bob', plan: 'pro', tenant: 'globex' }],
]);

interface Request {
  headers: Record<string, string | string[] | undefined>;
  user?: AuthUser;
}

/**
 * Authenticates `x-api-key` and sets `req.user`, or answers 401. Used per controller (`@UseGuards`), so it runs
 * after the rate limiter's global guard: that guard sees no user yet and leaves user-keyed policies to the
 * rate-limit interceptor, which runs after this guard and so keys them by `user:<id>`.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<Request>();
    const key = req.headers['x-api-key'];
    const user = typeof key === 'string' ? API_KEYS.get(key) : undefined;
    if (user === undefined) throw new UnauthorizedException('Missing or unknown x-api-key');
    req.user = { ...user };
    return true;
  }
}

/** The user ApiKeyGuard authenticated. */
export const CurrentUser = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): AuthUser => ctx.switchToHttp().getRequest<Request>().user as AuthUser,
);
