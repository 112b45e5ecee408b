import { isIP } from 'node:net';

import fc from 'fast-check';
import ipaddr from 'ipaddr.js';

import { compileList, listAddress, v6Groups } from '../../lib/lists/address-list.js';
import { RateLimitPolicyError, validatePolicy } from '../../lib/index.js';
import { nth } from '../support/harness.js';

const fail = (problem: string): never => {
  throw new Error(problem);
};
const compile = (entries: unknown[]) => {
  const list = compileList(entries, fail);
  if (list === undefined) throw new Error('expected a list');
  return list;
};
/** Whether the compiled `entries` name the client at `address` (as the adapters give it). */
const names = (entries: unknown[], address: string): boolean => {
  if (isIP(address) === 0) throw new Error(`not an address: ${address}`);
  return compile(entries).hasAddress(listAddress(address));
};

describe('allow and deny lists: addresses and CIDR ranges', () => {
  it.each([
    [['203.0.113.7'], '203.0.113.7', true],
    [['203.0.113.7'], '203.0.113.8', false],
    [['10.0.0.0/8'], '10.255.255.255', true],
    [['10.0.0.0/8'], '11.0.0.0', false],
    [['10.0.0.0/8'], '9.255.255.255', false],
    [['0.0.0.0/0'], '255.255.255.255', true],
    [['192.0.2.128/25'], '192.0.2.127', false],
    [['192.0.2.128/25'], '192.0.2.128', true],
    // Host bits under the prefix are ignored, as proxy-addr (trustProxy) reads them.
    [['10.1.2.3/16'], '10.1.200.1', true],
  ])('IPv4: %p names %p: %p', (entries, address, expected) => {
    expect(names(entries, address)).toBe(expected);
  });

  it.each([
    [['2001:db8::1'], '2001:db8::1', true],
    [['2001:db8::1'], '2001:db8:0:0:0:0:0:1', true],
    // The full address, not its /64: another address of the same /64 is another client.
    [['2001:db8::1'], '2001:db8::2', false],
    [['2001:db8:1:2::/64'], '2001:db8:1:2:ffff:ffff:ffff:ffff', true],
    [['2001:db8:1:2::/64'], '2001:db8:1:3::', false],
    [['2001:db8::/32'], '2001:db9::', false],
    [['::/0'], 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
    [['2001:db8::1/128'], '2001:db8::1', true],
  ])('IPv6: %p names %p: %p', (entries, address, expected) => {
    expect(names(entries, address)).toBe(expected);
  });

  it.each([
    // A client written IPv4-mapped is its IPv4 address ...
    [['192.0.2.0/24'], '::ffff:192.0.2.9', true],
    [['192.0.2.9'], '::ffff:c000:209', true],
    // ... and a mapped entry names the IPv4 client.
    [['::ffff:10.9.0.0/112'], '10.9.1.1', true],
    [['::ffff:10.9.0.0/112'], '10.10.0.0', false],
    [['::ffff:203.0.113.7'], '203.0.113.7', true],
    // A range that covers ::ffff:0:0/96 covers every IPv4 client (as in proxy-addr).
    [['::/0'], '198.51.100.1', true],
    [['::ffff:0:0/96'], '0.0.0.0', true],
    [['2001:db8::/32'], '198.51.100.1', false],
    [['10.0.0.0/8'], '2001:db8::a00:1', false],
  ])('IPv4-mapped: %p names %p: %p', (entries, address, expected) => {
    expect(names(entries, address)).toBe(expected);
  });

  it('merges overlapping ranges and keeps the functions in order', () => {
    const first = () => true;
    const second = async () => false;
    const list = compile(['10.0.0.0/8', first, '10.1.0.0/16', '10.0.0.5', '192.0.2.1', second, '2001:db8::/32']);
    expect(list.functions).toEqual([first, second]);
    expect(list.hasAddresses).toBe(true);
    expect(['10.200.0.1', '192.0.2.1', '2001:db8:ffff::1'].map((a) => list.hasAddress(listAddress(a)!))).toEqual([
      true,
      true,
      true,
    ]);
    expect(['11.0.0.0', '192.0.2.2', '2001:db9::'].map((a) => list.hasAddress(listAddress(a)!))).toEqual([
      false,
      false,
      false,
    ]);
    expect(compile([first]).hasAddresses).toBe(false);
  });

  it('an absent or empty list is no list (nothing to check per request)', () => {
    expect(compileList(undefined, fail)).toBeUndefined();
    expect(compileList([], fail)).toBeUndefined();
  });

  it('agrees with a one-by-one check of every range on random IPv4 lists and clients', () => {
    const cidr = fc.tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 32 }));
    const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
    fc.assert(
      fc.property(
        fc.array(cidr, { minLength: 1, maxLength: 30 }),
        fc.array(fc.nat(2 ** 32 - 1), { maxLength: 50 }),
        (ranges, clients) => {
          const list = compile(ranges.map(([base, bits]) => `${dotted(base)}/${bits}`));
          for (const client of [...clients, ...ranges.map(([base]) => base)]) {
            const expected = ranges.some(([base, bits]) => {
              const size = 2 ** (32 - bits);
              const first = Math.floor(base / size) * size;
              return client >= first && client <= first + size - 1;
            });
            expect(list.hasAddress(listAddress(dotted(client))!)).toBe(expected);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('agrees with a one-by-one check of every range on random IPv6 lists and clients', () => {
    const word = fc.integer({ min: 0, max: 0xffff });
    const address = fc.array(word, { minLength: 8, maxLength: 8 });
    const text = (words: number[]) => words.map((w) => w.toString(16)).join(':');
    const value = (words: number[]) => words.reduce((v, w) => (v << 16n) | BigInt(w), 0n);
    // Around a shared prefix so that ranges overlap and clients fall in and out of them.
    const near = (words: number[]) => [0x2001, 0xdb8, ...words.slice(2)];
    fc.assert(
      fc.property(
        fc.array(fc.tuple(address.map(near), fc.integer({ min: 32, max: 128 })), { minLength: 1, maxLength: 20 }),
        fc.array(address.map(near), { maxLength: 40 }),
        (ranges, clients) => {
          const list = compile(ranges.map(([words, bits]) => `${text(words)}/${bits}`));
          for (const client of [...clients, ...ranges.map(([words]) => words)]) {
            const expected = ranges.some(([words, bits]) => {
              const size = 1n << BigInt(128 - bits);
              const first = value(words) - (value(words) % size);
              return value(client) >= first && value(client) < first + size;
            });
            expect(list.hasAddress(listAddress(text(client))!)).toBe(expected);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the IPv6 parser of request addresses', () => {
  it.each([
    '::',
    '::1',
    '1::',
    '1::2',
    '2001:db8::1',
    '::ffff:1.2.3.4',
    '1:2:3:4:5:6:7:8',
    'FE80::A:b',
    '1:2:3:4:5:6:1.2.3.4',
  ])('%p reads as ipaddr.js reads it', (address) => {
    expect(v6Groups(address)).toEqual(ipaddr.IPv6.parse(address).parts);
  });

  it("reads the deprecated IPv4-compatible '::1.2.3.4' as RFC 4291 does: the quad is the low 32 bits", () => {
    // (ipaddr.js reads it as ::ffff:1.2.3.4.)
    expect(v6Groups('::1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0, 0x102, 0x304]);
    expect(compile(['1.2.3.4']).hasAddress(listAddress('::1.2.3.4'))).toBe(false);
    expect(compile(['::102:304']).hasAddress(listAddress('::1.2.3.4'))).toBe(true);
  });

  it('agrees with ipaddr.js on random addresses in every textual form', () => {
    // Runs of zero groups, so that '::' compression lands anywhere.
    const group = fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 0, max: 0xffff }));
    fc.assert(
      fc.property(fc.array(group, { minLength: 8, maxLength: 8 }), fc.boolean(), (groups, upper) => {
        const parsed = ipaddr.IPv6.parse(groups.map((g) => g.toString(16)).join(':'));
        const forms = [
          parsed.toString(),
          parsed.toNormalizedString(),
          groups.map((g) => g.toString(16).padStart(4, '0')).join(':'),
        ];
        // The last 32 bits as a dotted quad, compressed or not.
        const [g6, g7] = [nth(groups, 6), nth(groups, 7)];
        const quad = `${g6 >> 8}.${g6 & 255}.${g7 >> 8}.${g7 & 255}`;
        forms.push(
          `${groups
            .slice(0, 6)
            .map((g) => g.toString(16))
            .join(':')}:${quad}`,
        );
        if (groups.slice(0, 6).every((g) => g === 0)) forms.push(`::${quad}`);
        for (const form of forms.map((f) => (upper ? f.toUpperCase() : f))) {
          expect(isIP(form)).toBe(6);
          expect(v6Groups(form)).toEqual(groups);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('allow and deny lists: malformed entries', () => {
  it.each([
    ['10.0.0.0/33', /entry 0, "10\.0\.0\.0\/33", has a bad prefix length: an IPv4 CIDR range takes \/0 to \/32/],
    ['2001:db8::/129', /an IPv6 CIDR range takes \/0 to \/128/],
    ['10.0.0.0/', /bad prefix length/],
    ['10.0.0.0/-1', /bad prefix length/],
    ['10.0.0.0/8/8', /bad prefix length/],
    ['not-an-ip', /entry 0, "not-an-ip", is not an IP address or CIDR range/],
    ['10.1', /is not an IP address or CIDR range/],
    ['010.0.0.1', /is not an IP address or CIDR range/],
    [' 10.0.0.1', /is not an IP address or CIDR range/],
    ['', /is not an IP address or CIDR range/],
    ['loopback', /is not an IP address or CIDR range/],
    ['fe80::1%eth0', /zone ids are not part of a client address; write it without "%eth0"/],
  ])('%p is refused', (entry, message) => {
    expect(() => compileList([entry], fail)).toThrow(message);
  });

  it('refuses entries that are neither strings nor functions, and lists that are not arrays', () => {
    expect(() => compileList(['10.0.0.1', 42], fail)).toThrow(
      'entry 1 must be an address, a CIDR range or a function, got 42',
    );
    expect(() => compileList('10.0.0.1', fail)).toThrow(/must be an array of client addresses, CIDR ranges/);
  });

  it('validatePolicy names the policy, where it is declared and the field', () => {
    const policy = {
      name: 'signup',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
      deny: ['10.0.0.0/33'],
    } as const;
    expect(() => validatePolicy(policy, 'AuthController.signup')).toThrow(RateLimitPolicyError);
    expect(() => validatePolicy(policy, 'AuthController.signup')).toThrow(
      'Invalid rate-limit policy "signup" (declared on AuthController.signup), field "deny": entry 0, "10.0.0.0/33", has a bad prefix length: an IPv4 CIDR range takes /0 to /32',
    );
    expect(() =>
      validatePolicy({ name: 'quota', algorithm: 'quota', period: 'day', limit: 5, allow: ['not-an-ip'] }, 'A.b'),
    ).toThrow('Invalid rate-limit policy "quota" (declared on A.b), field "allow": entry 0, "not-an-ip", is not an IP');
  });
});
