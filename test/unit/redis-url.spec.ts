import { maskedUrl, redisUrlArgument } from '../../lib/stores/redis/redis-url.js';

// What ioredis is given for `redis.url` (test/regressions/redis-url-scheme.spec.ts starts apps on each form).
describe('redisUrlArgument', () => {
  it.each([
    ['redis://:pw@h:6379/2', 'redis://:pw@h:6379/2'],
    ['h:6379', 'h:6379'],
    ['redis:6379', 'redis:6379'], // the host "redis" (a compose service), port 6379: not a scheme
    ['[::1]:6379', '[::1]:6379'],
    ['6379', '6379'],
    ['//h:6379', '//h:6379'],
    ['/run/redis.sock?db=2', '/run/redis.sock?db=2'],
    ['unix:///run/redis.sock?db=2', '/run/redis.sock?db=2'],
    ['unix:/run/redis.sock', '/run/redis.sock'],
    // ioredis turns TLS on only for "rediss://" as written: an upper-case scheme would connect in plain text.
    ['REDISS://h:6380', 'rediss://h:6380'],
  ])('%s → %s', (url, given) => {
    expect(redisUrlArgument(url)).toBe(given);
  });

  it.each([
    ['valkey://h:6379', 'has the scheme "valkey:", which is not a Redis URL (Valkey speaks the Redis protocol'],
    ['redis+unix:///run/redis.sock', 'has the scheme "redis+unix:"'],
    ['redis:h:6379', 'has no // after "redis:" (write redis://host:port)'],
    ['unix://h/run/redis.sock', 'a unix: URL is unix:///path/to/redis.sock, with no host'],
  ])('refuses %s', (url, problem) => {
    expect(() => redisUrlArgument(url)).toThrow(problem);
  });

  it('masks the user information and a password parameter', () => {
    expect(maskedUrl('http://u:pw@h:1/0?password=pw&db=1')).toBe('http://***@h:1/0?password=***&db=1');
  });
});
