import { type CanActivate, type ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';

/** What the guards below read and write of a request: the `x-user` header, and the user they set. */
interface UserRequest {
  headers: Record<string, string | string[] | undefined>;
  user?: { id: string };
}

const userHeaderOf = (ctx: ExecutionContext): [UserRequest, string | undefined] => {
  const req = ctx.switchToHttp().getRequest<UserRequest>();
  const user = req.headers['x-user'];
  return [req, typeof user === 'string' ? user : undefined];
};

/** Authentication as a test app has it: sets `req.user` from `x-user`, and refuses a request without one (401). */
@Injectable()
export class RequiredUserGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const [req, user] = userHeaderOf(ctx);
    if (user === undefined) throw new UnauthorizedException();
    req.user = { id: user };
    return true;
  }
}

/** Sets `req.user` from `x-user` when there is one, and lets anonymous requests through. */
@Injectable()
export class OptionalUserGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const [req, user] = userHeaderOf(ctx);
    if (user !== undefined) req.user = { id: user };
    return true;
  }
}
