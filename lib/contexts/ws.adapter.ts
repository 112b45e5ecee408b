import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';

import type { ExecutionContext } from '@nestjs/common';
import type * as Websockets from '@nestjs/websockets';

import { clientAddress, clientIp, ForwardedForCheck, isTrustNone } from '../keys/client-ip.js';
import { importPeer } from '../util/optional-peer.js';
import type { RateLimitDecision } from '../policy/policy.types.js';
import type * as Adapter from './context-adapter.js';
import { userIdOf } from './http.adapter.js';

/**
 * What the client of a denied WebSocket message receives as the data of Nest's `exception` event.
 * @example socket.on('exception', (e: WsRateLimitedError) => { if (e.code === 'RATE_LIMITED') retryIn(e.retryAfter); })
 */
export interface WsRateLimitedError extends Adapter.RateLimitDenial {
  /** As Nest's own WebSocket errors (`{ status: 'error', message }`), so clients that check it keep working. */
  readonly status: 'error';
}

/** What the client of a WebSocket message receives (`exception` event) when a deny list names it. */
export interface WsDenyListError {
  readonly status: 'error';
  readonly code: 'RATE_LIMIT_DENY_LIST';
  readonly message: string;
}

/** What the client of a WebSocket message receives (`exception` event) when a fail-closed policy's store is down. */
export interface WsUnavailableError extends Adapter.RateLimitUnavailable {
  readonly status: 'error';
}

/** What the client of a WebSocket message receives (`exception` event) when load shedding refuses it. */
export interface WsOverloadedError extends Adapter.RateLimitOverloaded {
  readonly status: 'error';
}

/** A user as apps attach it to a connection: the id (or a JWT's `sub`) keys `'user'` policies. */
interface UserLike {
  readonly id?: unknown;
  readonly sub?: unknown;
}

/**
 * What a socket.io `Socket` keeps of its handshake for the connection's life (public socket.io API):
 * the headers of the first request and the address it came from. `data` is socket.io's per-socket bag,
 * where apps put what their connection middleware authenticated.
 */
interface SocketIoClient {
  readonly handshake: { readonly headers: IncomingHttpHeaders; readonly address?: string };
  readonly data?: { readonly user?: UserLike } | null;
  readonly user?: UserLike | null;
}

/**
 * A `ws` WebSocket on the server side. `ws` does not keep the upgrade request; `_socket` (the net.Socket of
 * the upgrade, set by `WebSocket#setSocket`) is internal to `ws` — there is no public getter for it — and is
 * the only link from a message back to its handshake. Apps conventionally attach their user as `client.user`.
 */
interface WsClient {
  readonly _socket?: { readonly remoteAddress?: string } | null;
  readonly user?: UserLike | null;
}

/** The part of an IncomingMessage that `clientIp()` reads (X-Forwarded-For and the socket address). */
type HandshakeLike = Pick<IncomingMessage, 'headers'> & { readonly socket: { readonly remoteAddress?: string } };

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null;

const isSocketIoClient = (client: object): client is SocketIoClient =>
  isObject((client as { handshake?: unknown }).handshake) &&
  isObject((client as { handshake: { headers?: unknown } }).handshake.headers);

const isWsClient = (client: object): client is WsClient => isObject((client as { _socket?: unknown })._socket);

/**
 * Rate limiting for @nestjs/websockets gateways, on socket.io (@nestjs/platform-socket.io, Nest's default) and
 * on `ws` (@nestjs/platform-ws). Each message is one decision; `'ip'` keys are the handshake's client address
 * (trustProxy applied to the handshake's headers); a denied message is not handled, and its client receives
 * Nest's `exception` event with `{ status: 'error', code, message, policy, retryAfter }`; the connection stays
 * open. WebSockets have no headers per message, so setHeaders does nothing.
 */
class WsContextAdapter implements Adapter.ContextAdapter {
  readonly type = 'ws' as const;
  /** The client address of each connection: its handshake is fixed, so it is computed once per connection. */
  private readonly addresses = new WeakMap<object, string>();
  /** The full address (what lists match) of each connection; null when it has none. */
  private readonly fullAddresses = new WeakMap<object, string | null>();
  /**
   * The upgrade request of each socket upgraded by the application's HTTP server, which is where the `ws`
   * gateways that share the app's port take their connections from (see watchUpgrades).
   */
  private readonly upgrades = new WeakMap<object, IncomingMessage>();
  private warnedNoHandshake = false;
  private readonly forwardedFor = new ForwardedForCheck('A WebSocket handshake');
  private warnedUnknownClient = false;

  /** @param WsException @nestjs/websockets' own, which Nest's filters recognise (loaded by the factory). */
  constructor(
    private readonly settings: Adapter.AdapterSettings,
    private readonly WsException: typeof Websockets.WsException,
  ) {
    this.watchUpgrades();
  }

  /**
   * `ws` keeps no handshake on its clients, so the upgrade requests of the app's HTTP server are remembered by
   * their socket (weakly: they go with the connection), and found again at message time through the client's
   * socket. Gateways on a port of their own are upgraded by a server the app does not expose: their clients are
   * keyed by the socket address (see handshakeOf). socket.io keeps its handshake and needs none of this.
   */
  private watchUpgrades(): void {
    // Absent in a microservice or a standalone application: no HTTP server, nothing to watch.
    const httpAdapter = this.settings.httpAdapterHost?.httpAdapter as { getHttpServer?: () => unknown } | undefined;
    const server: unknown = httpAdapter?.getHttpServer?.();
    if (!(server instanceof EventEmitter)) return;
    const onUpgrade = (req: IncomingMessage, socket: { destroy(): void }): void => {
      // No other 'upgrade' listener: nobody will complete this upgrade. Without any listener Node would have
      // answered it as a plain HTTP request; with this one it hands the socket over, so refuse it here
      // rather than leave it open for ever (a test checks this).
      if (server.listenerCount('upgrade') === 1) {
        socket.destroy();
        return;
      }
      this.upgrades.set(socket, req);
    };
    // First, so the request is known before any gateway completes the upgrade and a message can arrive.
    server.prependListener('upgrade', onUpgrade);
  }

  /**
   * The arguments array of the message: Nest's WsProxy builds one per message (`[client, data, ack | event,
   * pattern]`) and passes that same array to the guards and the interceptors of the handler. The data object
   * could not serve: it may be a primitive, or the same object in two messages.
   */
  invocation(ctx: ExecutionContext): object {
    return ctx.getArgs();
  }

  clientIp(ctx: ExecutionContext): string | undefined {
    const client: unknown = ctx.switchToWs().getClient();
    if (!isObject(client)) return undefined;
    const known = this.addresses.get(client);
    if (known !== undefined) return known;
    const handshake = this.checkedHandshake(client);
    if (handshake === undefined) return undefined;
    // clientIp() reads only `headers` and `socket.remoteAddress` of the request it is given.
    const address = clientIp(handshake as IncomingMessage, this.settings.trust, this.settings.ipv6Prefix);
    this.addresses.set(client, address);
    return address;
  }

  clientAddress(ctx: ExecutionContext): string | undefined {
    const client: unknown = ctx.switchToWs().getClient();
    if (!isObject(client)) return undefined;
    const known = this.fullAddresses.get(client);
    if (known !== undefined) return known ?? undefined;
    const handshake = this.checkedHandshake(client);
    if (handshake === undefined) return undefined;
    const address = clientAddress(handshake as IncomingMessage, this.settings.trust);
    this.fullAddresses.set(client, address ?? null);
    return address;
  }

  /** The handshake of a connection; warns once about an X-Forwarded-For that no trusted proxy vouches for. */
  private checkedHandshake(client: object): HandshakeLike | undefined {
    const handshake = this.handshakeOf(client);
    if (handshake === undefined) return undefined;
    this.forwardedFor.check(handshake.headers, this.settings.trust, this.settings.logger);
    return handshake;
  }

  /** The handshake of a connection, as `clientIp()` reads it; undefined for a client of an unknown library. */
  private handshakeOf(client: object): HandshakeLike | undefined {
    if (isSocketIoClient(client)) {
      return { headers: client.handshake.headers, socket: { remoteAddress: client.handshake.address } };
    }
    if (isWsClient(client)) {
      const socket = client._socket as object;
      const upgrade = this.upgrades.get(socket);
      if (upgrade !== undefined) return upgrade;
      if (!this.warnedNoHandshake && !isTrustNone(this.settings.trust)) {
        this.warnedNoHandshake = true;
        this.settings.logger.warn(
          'A ws gateway on a port of its own: its handshakes are not seen by the application, so trustProxy does ' +
            "not apply to them and 'ip' keys use the socket address. Put the gateway on the application's port " +
            '(@WebSocketGateway() or @WebSocketGateway({ path })) for X-Forwarded-For to be read.',
        );
      }
      return { headers: {}, socket: { remoteAddress: client._socket?.remoteAddress } };
    }
    if (!this.warnedUnknownClient) {
      this.warnedUnknownClient = true;
      const name = (client as { constructor?: { name?: string } }).constructor?.name ?? typeof client;
      this.settings.logger.warn(
        `A WebSocket client of an unknown kind (${name}, neither socket.io nor ws): 'ip' keys cannot see its ` +
          "address. Key such gateways' policies by a function of the client instead.",
      );
    }
    return undefined;
  }

  /** A user attached at connection: `client.data.user` (socket.io's per-socket data), else `client.user`. */
  defaultUser(ctx: ExecutionContext): string | undefined {
    const client: unknown = ctx.switchToWs().getClient();
    if (!isObject(client)) return undefined;
    const { data, user } = client as { data?: { user?: UserLike } | null; user?: UserLike | null };
    return userIdOf(data?.user) ?? userIdOf(user);
  }

  /** WebSocket messages have no header fields: nothing to write. */
  setHeaders(): void {}

  /** The client gets Nest's `exception` event with this object as it is (BaseWsExceptionFilter emits it). */
  deny(_ctx: ExecutionContext, denial: Adapter.RateLimitDenial, _decision: RateLimitDecision): never {
    // retryAfter is absent when retrying cannot help (a cost that never fits), as in the denial.
    const error: WsRateLimitedError = { status: 'error', ...denial };
    throw new this.WsException(error);
  }

  unavailable(_ctx: ExecutionContext, outage: Adapter.RateLimitUnavailable): never {
    const error: WsUnavailableError = { status: 'error', ...outage };
    throw new this.WsException(error);
  }

  /** `{ status: 'error', code: 'OVERLOADED', message, criticality, retryAfter }` as the `exception` event. */
  overloaded(_ctx: ExecutionContext, overload: Adapter.RateLimitOverloaded): never {
    const error: WsOverloadedError = { status: 'error', ...overload };
    throw new this.WsException(error);
  }

  /** `{ status: 'error', code: 'RATE_LIMIT_DENY_LIST', message }` as the `exception` event; the connection stays open. */
  forbid(_ctx: ExecutionContext, refusal: Adapter.RateLimitRefusal): never {
    const error: WsDenyListError = { status: 'error', code: refusal.code, message: refusal.message };
    throw new this.WsException(error);
  }
}

/** The WebSocket adapter (`ctx.getType() === 'ws'`), loaded only by applications that have gateways. */
export const wsAdapter: Adapter.AdapterFactory = async (settings) => {
  const { WsException } = await importPeer<typeof Websockets>('@nestjs/websockets');
  return new WsContextAdapter(settings, WsException);
};
