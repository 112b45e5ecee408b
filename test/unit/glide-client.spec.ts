import { Test } from '@nestjs/testing';

import { RateLimitModule, RedisRateLimitStore } from '../../lib/index.js';

// Valkey GLIDE (@valkey/valkey-glide) is not driven yet: a client of it stops the start with what to give instead,
// rather than the generic "it has no call, evalsha..." of an object that is no Redis client. Its two clients
// share these methods on their prototype (checked against @valkey/valkey-glide 2.5.2's GlideClient and
// GlideClusterClient); the classes below have that shape and nothing else.
class GlideClient {
  customCommand(): Promise<unknown> {
    return Promise.reject(new Error('never called'));
  }
  invokeScript(): Promise<unknown> {
    return Promise.reject(new Error('never called'));
  }
}
class GlideClusterClient extends GlideClient {}

const ADVICE =
  /is a Valkey GLIDE client \((GlideClient|GlideClusterClient) of @valkey\/valkey-glide\), which the module does not drive yet: give an iovalkey or ioredis Redis or Cluster connected to the same endpoint/;

describe('a Valkey GLIDE client', () => {
  it.each([
    ['GlideClient', GlideClient],
    ['GlideClusterClient', GlideClusterClient],
  ])('a %s is refused by the store, naming what to give instead', (_, Client) => {
    expect(() => new RedisRateLimitStore({ client: new Client() as never })).toThrow(ADVICE);
    expect(() => new RedisRateLimitStore({ client: new Client() as never })).toThrow(Client.name);
  });

  it('stops the start of the module', async () => {
    const compiled = Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: { client: new GlideClusterClient() as never } })],
    }).compile();
    await expect(compiled).rejects.toThrow(/option redis\.client is a Valkey GLIDE client \(GlideClusterClient/);
  });
});
