import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

import type { LoggerService } from '@nestjs/common';
import ipaddr from 'ipaddr.js';
import proxyaddr from 'proxy-addr';

import { elementAt } from '../util/element-at.js';

/** Which proxies to believe for X-Forwarded-For, with the semantics of the `proxy-addr` package. */
export type TrustProxy = boolean | number | string | string[] | ((addr: string, hop: number) => boolean);

/** Decides whether the hop at `addr`, `hop` steps from the socket, is a proxy to believe. */
export type TrustFn = (addr: string, hop: number) => boolean;

const trustNone: TrustFn = () => false;
const trustAll: TrustFn = () => true;

/**
 * Turns `trustProxy` into a trust function, with the semantics of `proxy-addr` (as Express uses it): false
 * trusts nothing, true every hop, a number that many hops, strings and arrays name addresses, CIDR ranges or
 * the presets 'loopback', 'linklocal', 'uniquelocal' (comma-separated strings allowed).
 */
export function compileTrust(trust: TrustProxy | undefined): TrustFn {
  if (trust === undefined || trust === false) return trustNone;
  if (trust === true) return trustAll;
  if (typeof trust === 'function') return trust;
  if (typeof trust === 'number') {
    if (!Number.isSafeInteger(trust) || trust < 0) {
      throw new TypeError(`nest-rate-limit: trustProxy as a number must be a hop count >= 0, got ${trust}`);
    }
    return (_addr, hop) => hop < trust;
  }
  const list = (Array.isArray(trust) ? trust : trust.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  try {
    return proxyaddr.compile(list);
  } catch (error) {
    throw new TypeError(
      `nest-rate-limit: trustProxy ${JSON.stringify(trust)} is invalid: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** The address in `raw` without brackets, port or zone id, if it is an IP address; else undefined. */
function bareIp(raw: string): string | undefined {
  let address = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address)?.[1];
  if (bracketed !== undefined) address = bracketed;
  else if (/^\d{1,3}(?:\.\d{1,3}){3}:\d+$/.test(address)) address = address.slice(0, address.lastIndexOf(':'));
  const zone = address.indexOf('%');
  if (zone !== -1) address = address.slice(0, zone);
  return isIP(address) === 0 ? undefined : address;
}

/** The identity of a valid bare address: IPv4 as it is (also IPv4-mapped), IPv6 as its network of `ipv6Prefix` bits. */
function identityOf(address: string, ipv6Prefix: number): string {
  if (!address.includes(':')) return address;
  const v6 = ipaddr.IPv6.parse(address);
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  const bytes = v6.toByteArray();
  for (let bit = ipv6Prefix; bit < 128; bit++) {
    const i = bit >> 3;
    bytes[i] = elementAt(bytes, i, 'the 16 bytes of an IPv6 address') & ~(0x80 >> (bit & 7));
  }
  return `${ipaddr.fromByteArray(bytes).toString()}/${ipv6Prefix}`;
}

/**
 * Reduces an address to the identity of its client: IPv4 as it is (also when written IPv4-mapped, as
 * `::ffff:10.0.0.1`), IPv6 as its network of `ipv6Prefix` bits (`2001:db8:1:2::/64`), since one client often
 * holds a whole /64. Brackets, ports and zone ids are dropped. Returns undefined for anything that is not an IP.
 */
export function normalizeIp(raw: string, ipv6Prefix: number): string | undefined {
  const address = bareIp(raw);
  return address === undefined ? undefined : identityOf(address, ipv6Prefix);
}

/**
 * The full address of the client of a request (allow and deny lists match it): the socket address, or,
 * walking X-Forwarded-For from the socket outwards, the first address not sent by a trusted proxy — the hop
 * `clientIp()` keys by, before any /64 reduction. Brackets, ports and zone ids are dropped; an IPv4-mapped
 * address is left as written. An entry that is not an IP is never the client: the nearest valid address
 * before it (towards the socket) is used, so garbage cannot mint fresh identities. Undefined when none is valid.
 */
export function clientAddress(req: IncomingMessage, trust: TrustFn): string | undefined {
  const chain = trust === trustNone ? [req.socket?.remoteAddress ?? ''] : proxyaddr.all(req, trust);
  for (let i = chain.length - 1; i >= 0; i--) {
    const address = bareIp(chain[i] ?? '');
    if (address !== undefined) return address;
  }
  return undefined;
}

/** The client of a request as `'ip'` keys see it: the identity (see normalizeIp) of `clientAddress()`, or 'unknown'. */
export function clientIp(req: IncomingMessage, trust: TrustFn, ipv6Prefix: number): string {
  const address = clientAddress(req, trust);
  return address === undefined ? 'unknown' : identityOf(address, ipv6Prefix);
}

export const isTrustNone = (trust: TrustFn): boolean => trust === trustNone;
export const isTrustAll = (trust: TrustFn): boolean => trust === trustAll;

/**
 * The warning, once per context, about an X-Forwarded-For that trustProxy does not let count (the classic
 * spoofing hole's other side: behind a proxy, every client would be keyed by the proxy's address).
 */
export class ForwardedForCheck {
  private warned = false;

  /** `carrier` says what carried the header: 'A request', 'A GraphQL request', 'A WebSocket handshake'. */
  constructor(private readonly carrier: string) {}

  check(headers: IncomingHttpHeaders | undefined, trust: TrustFn, logger: Pick<LoggerService, 'warn'>): void {
    if (this.warned || !isTrustNone(trust) || headers?.['x-forwarded-for'] === undefined) return;
    this.warned = true;
    logger.warn(
      `${this.carrier} carried X-Forwarded-For but trustProxy is off, so clients are keyed by the socket address. ` +
        'Behind a proxy, set trustProxy to it (a hop count, CIDRs or "loopback").',
    );
  }
}
