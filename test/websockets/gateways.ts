import type { IncomingMessage } from 'node:http';

import { type CanActivate, type ExecutionContext, UseGuards, UseInterceptors } from '@nestjs/common';
import { MessageBody, type OnGatewayConnection, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';

import { RateLimit, RateLimitGuard, RateLimitInterceptor } from '../../lib/index.js';
import { perMinute } from '../support/policies.js';

export const POLICIES = {
  flood: perMinute('flood', 100),
  pairWide: perMinute('pair-wide', 5),
  pairNarrow: perMinute('pair-narrow', 3),
  open: perMinute('open', 1000, { failMode: 'open' }),
  closed: perMinute('closed', 1000, { failMode: 'closed' }),
  byIp: perMinute('by-ip', 10),
  byUser: perMinute('by-user', 2, { key: 'user' }),
};

/** What a client received: the event's name and its payload. */
export interface Message {
  readonly event: string;
  readonly data: unknown;
}

/** The payload a gateway handler answers with, as the `handled` event. */
export const handled = (event: string, data: unknown): Message => ({ event: 'handled', data: { event, data } });

/**
 * One gateway for both platforms (on the app's port and path '/'). A user is attached at connection:
 * socket.io as `client.data.user` from the handshake's `auth.user`, ws as `client.user` from `?user=`.
 */
@WebSocketGateway()
export class ChatGateway implements OnGatewayConnection {
  /** Handled messages per event. */
  readonly handled = new Map<string, number>();

  handleConnection(client: object, req?: IncomingMessage): void {
    const socketIo = client as { handshake?: { auth?: { user?: unknown } }; data: { user?: { id: string } } };
    if (socketIo.handshake !== undefined) {
      const user = socketIo.handshake.auth?.user;
      if (typeof user === 'string') socketIo.data.user = { id: user };
      return;
    }
    const user = new URL(req?.url ?? '/', 'ws://localhost').searchParams.get('user');
    if (user !== null) (client as { user?: { id: string } }).user = { id: user };
  }

  private done(event: string, data: unknown): Message {
    this.handled.set(event, (this.handled.get(event) ?? 0) + 1);
    return handled(event, data);
  }

  @SubscribeMessage('flood')
  @RateLimit(POLICIES.flood)
  flood(@MessageBody() data: unknown) {
    return this.done('flood', data);
  }

  @SubscribeMessage('pair')
  @RateLimit([POLICIES.pairWide, POLICIES.pairNarrow])
  pair(@MessageBody() data: unknown) {
    return this.done('pair', data);
  }

  @SubscribeMessage('open')
  @RateLimit(POLICIES.open)
  open(@MessageBody() data: unknown) {
    return this.done('open', data);
  }

  @SubscribeMessage('closed')
  @RateLimit(POLICIES.closed)
  closed(@MessageBody() data: unknown) {
    return this.done('closed', data);
  }

  @SubscribeMessage('by-ip')
  @RateLimit(POLICIES.byIp)
  byIp(@MessageBody() data: unknown) {
    return this.done('by-ip', data);
  }

  @SubscribeMessage('by-user')
  @RateLimit(POLICIES.byUser)
  byUser(@MessageBody() data: unknown) {
    return this.done('by-user', data);
  }
}

/** A gateway with no @RateLimit: only the module's defaults, through the global guard, can limit it. */
@WebSocketGateway()
export class PlainGateway {
  @SubscribeMessage('plain')
  plain(@MessageBody() data: unknown) {
    return handled('plain', data);
  }
}

/** A gateway whose handler declares a bad policy: the application must not start. */
@WebSocketGateway()
export class BadGateway {
  @SubscribeMessage('flood')
  @RateLimit(perMinute('bad', 0))
  flood(@MessageBody() data: unknown) {
    return handled('flood', data);
  }
}

/** Authenticates each message by its `token`, as `data.user` (what the app's `user` option then reads). */
class MessageAuthGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const data = ctx.switchToWs().getData<{ token?: string; user?: { id: string } } | null>();
    if (typeof data?.token !== 'string') return false;
    data.user = { id: data.token };
    return true;
  }
}

/** The module's `user` option for GuardedGateway: the user the message's guard authenticated. */
export const messageUser = (ctx: ExecutionContext): string | undefined =>
  ctx.getType() === 'ws' ? ctx.switchToWs().getData<{ user?: { id?: string } } | null>()?.user?.id : undefined;

export const GUARDED_POLICIES = {
  ip: perMinute('guarded-ip', 10),
  user: perMinute('guarded-user', 2, { key: 'user' }),
};

/**
 * Per-message authentication with `global: false`: RateLimitGuard after the gateway's auth guard, so
 * user-keyed policies see the user that guard authenticated.
 */
@WebSocketGateway()
@UseGuards(MessageAuthGuard, RateLimitGuard)
export class GuardedGateway {
  handled = 0;

  @SubscribeMessage('guarded')
  @RateLimit([GUARDED_POLICIES.ip, GUARDED_POLICIES.user])
  guarded(@MessageBody() data: { n?: number }) {
    this.handled++;
    return handled('guarded', data.n);
  }
}

/**
 * Per-message authentication with the module's global guard: the gateway's own guard authenticates after
 * the global guard, so user-keyed policies wait for it (the limiter's interceptor decides them).
 */
@WebSocketGateway()
@UseGuards(MessageAuthGuard)
export class AuthenticatingGateway {
  handled = 0;

  @SubscribeMessage('authenticated')
  @RateLimit([GUARDED_POLICIES.ip, GUARDED_POLICIES.user])
  authenticated(@MessageBody() data: { n?: number }) {
    this.handled++;
    return handled('authenticated', data.n);
  }
}

export const ONCE_POLICY = perMinute('once', 3);

/** RateLimitInterceptor as well as the global guard: both ask, and each message must be decided once. */
@WebSocketGateway()
@UseInterceptors(RateLimitInterceptor)
export class InterceptedGateway {
  @SubscribeMessage('once')
  @RateLimit(ONCE_POLICY)
  once(@MessageBody() data: unknown) {
    return handled('once', data);
  }
}
