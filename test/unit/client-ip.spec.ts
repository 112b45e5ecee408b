import { normalizeIp } from '../../lib/keys/client-ip.js';

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
