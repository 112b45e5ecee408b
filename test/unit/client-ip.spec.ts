import type { IncomingMessage } from 'node:http';

import type { TrustProxy } from '../../lib/nest/rate-limit.options.js';
import { clientAddress, clientIp, compileTrust, normalizeIp } from '../../lib/keys/client-ip.js';

describe('normalizeIp', () => {
  it.each([
    ['10.0.0.1', '10.0.0.1'],
    ['::ffff:10.0.0.1', '10.0.0.1'],
    ['::FFFF:10.0.0.1', '10.0.0.1'],
    ['10.0.0.1:8080', '10.0.0.1'],
    ['[2001:db8::1]:443', '2001:db8::/64'],
    ['2001:db8:0:0:ffff:1:2:3', '2001:db8::/64'],
    ['2001:db8:aaaa:bbbb:cccc::1', '2001:db8:aaaa:bbbb::/64'],
    ['fe80::1%eth0', 'fe80::/64'],
    [' 192.0.2.1 ', '192.0.2.1'],
  ])('%p is the client %p', (input, expected) => {
    expect(normalizeIp(input, 64)).toBe(expected);
  });

  it('honours the prefix length', () => {
    expect(normalizeIp('2001:db8:aaaa:bbbb::1', 48)).toBe('2001:db8:aaaa::/48');
    expect(normalizeIp('2001:db8::1', 128)).toBe('2001:db8::1/128');
  });

  it.each(['', 'garbage', 'unknown', '1', '0x7f.1', '999.1.1.1', '1.2.3', '[::1', '2001:db8::g', 'a'.repeat(10_000)])(
    'rejects %p',
    (input) => {
      expect(normalizeIp(input, 64)).toBeUndefined();
    },
  );
});

/** A request from `socket` with the X-Forwarded-For header `forwarded` (nearest proxy last). */
const from = (socket: string, forwarded?: string): IncomingMessage =>
  ({
    socket: { remoteAddress: socket },
    connection: { remoteAddress: socket },
    headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
  }) as unknown as IncomingMessage;

// The spoofing hole: a client writes any X-Forwarded-For it likes, so only the entries added by proxies the
// configuration names may be believed; one hop more keys the client by an address it chose.
describe('clientIp believes no untrusted hop', () => {
  // 198.51.100.7 is what the client wrote; 203.0.113.9 what the (only) proxy saw; 10.0.0.2 is the proxy.
  const spoofed = from('10.0.0.2', '198.51.100.7, 203.0.113.9');

  it.each([
    ['false (the default)', '10.0.0.2', false],
    ['0 hops', '10.0.0.2', 0],
    ['1 hop', '203.0.113.9', 1],
    ['2 hops', '198.51.100.7', 2],
    ['the proxy by CIDR', '203.0.113.9', '10.0.0.0/8'],
    ['the proxy and 203.0.113.0/24 by CIDR', '198.51.100.7', ['10.0.0.0/8', '203.0.113.0/24']],
    ['another network only', '10.0.0.2', '192.168.0.0/16'],
  ])('trustProxy %s: the client is %s', (_what, expected, trust) => {
    expect(clientIp(spoofed, compileTrust(trust as TrustProxy), 64)).toBe(expected);
    expect(clientAddress(spoofed, compileTrust(trust as TrustProxy))).toBe(expected);
  });
});
