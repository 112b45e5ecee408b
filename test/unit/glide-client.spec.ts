import { Test } from '@nestjs/testing';
import { Decoder, GlideClientConfiguration, RequestError, TimeoutError } from '@valkey/valkey-glide';

import { RateLimitModule, RedisRateLimitStore } from '../../lib/index.js';
import { driverOf } from '../../lib/stores/redis/clients/driver-of.js';
import { GlideDriver } from '../../lib/stores/redis/clients/glide-driver.js';
import { asReplyError, fromGlide } from '../../lib/stores/redis/clients/glide-replies.js';
import { GLIDE_DECODER_STRING, GLIDE_PUBSUB_EXACT } from '../../lib/stores/redis/clients/glide-types.js';
import { isReplyError } from '../../lib/stores/redis/clients/redis-driver.js';

// Valkey GLIDE (@valkey/valkey-glide) is driven like the other clients (test/redis, test/fault, test/cluster and
// the conformance suites run it on real servers). Here, what needs no server: how a client is told apart, what
// its driver reads of it, and how GLIDE's replies and errors are put back into the shape the store reads. The
// classes below have the shape of @valkey/valkey-glide 2.5.2's GlideClient and GlideClusterClient, and nothing else.
class GlideClient {
  constructor(readonly config?: object) {}
  customCommand(): Promise<unknown> {
    return Promise.reject(new Error('never called'));
  }
  invokeScript(): Promise<unknown> {
    return Promise.reject(new Error('never called'));
  }
  close(): void {}
}
class GlideClusterClient extends GlideClient {
  invokeScriptWithRoute(): Promise<unknown> {
    return Promise.reject(new Error('never called'));
  }
}

const secret = { credentials: { username: 'app', password: 's3cret' } };

describe('a Valkey GLIDE client', () => {
  it('is driven: a GlideClient as a standalone Redis, a GlideClusterClient as a Cluster, no password in its address', () => {
    const standalone = driverOf(
      new GlideClient({ addresses: [{ host: 'cache', port: 6380 }], databaseId: 2, ...secret }),
      'x',
    );
    expect(standalone).toBeInstanceOf(GlideDriver);
    expect([standalone.isCluster, standalone.address, standalone.canSubscribe]).toEqual([
      false,
      'Redis at cache:6380/2',
      true,
    ]);
    const cluster = driverOf(
      new GlideClusterClient({ addresses: [{ host: 'a' }, { host: 'b', port: 7001 }], ...secret }),
      'x',
    );
    expect([cluster.isCluster, cluster.address]).toEqual([true, 'a Redis Cluster (a:6379, b:7001)']);
    expect(() => new RedisRateLimitStore({ client: new GlideClusterClient({ addresses: [] }) })).not.toThrow();
  });

  it('without a configuration to copy: the store has no feed, and the module stops its start saying why', async () => {
    expect(new RedisRateLimitStore({ client: new GlideClient() }).changes).toBeUndefined();
    const compiled = Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: { client: new GlideClusterClient() } })],
    }).compile();
    await expect(compiled).rejects.toThrow(
      /the GlideClusterClient given keeps no configuration the module can read .* give `redis: \{ url \}`/,
    );
  });

  it("takes GLIDE's decoder and pub/sub constants from its package's values", () => {
    expect(GLIDE_DECODER_STRING).toBe(Decoder.String);
    expect(GLIDE_PUBSUB_EXACT).toBe(GlideClientConfiguration.PubSubChannelModes.Exact);
  });

  it.each([
    [
      'An error was signalled by the server: - NoScriptError: No matching script. Please use EVAL.',
      'NOSCRIPT No matching script. Please use EVAL.',
    ],
    ['An error was signalled by the server: - ResponseError: Function not found', 'ERR Function not found'],
    [
      "An error was signalled by the server: - ResponseError: unknown command 'FCALL', with args beginning with: ",
      "ERR unknown command 'FCALL', with args beginning with: ",
    ],
    [
      'WRONGTYPE: Operation against a key holding the wrong kind of value',
      'WRONGTYPE Operation against a key holding the wrong kind of value',
    ],
  ])("an error the server answered (%s) is a RedisReplyError with the server's message", (glide, redis) => {
    const error = asReplyError(new RequestError(glide));
    expect(isReplyError(error)).toBe(true);
    expect((error as Error).message).toBe(redis);
  });

  it('an error of the connection stays what it is', () => {
    const timeout = new TimeoutError('timed out');
    expect(asReplyError(timeout)).toBe(timeout);
    const connect = new RequestError('Standalone connect failed - IoError: Received error for address `127.0.0.1:1`');
    expect(asReplyError(connect)).toBe(connect);
  });

  it('replies come back as ioredis gives them', () => {
    expect(fromGlide([1, 'a', null, [2n, true, false], Buffer.from('b')])).toEqual([1, 'a', null, [2, 1, null], 'b']);
    // a RESP3 map, which GLIDE gives as [{ key, value }]; a set
    expect(
      fromGlide([
        { key: 'f', value: '1' },
        { key: 'g', value: '2' },
      ]),
    ).toEqual(['f', '1', 'g', '2']);
    expect(fromGlide(new Set(['x']))).toEqual(['x']);
    expect(fromGlide(2n ** 64n)).toBe('18446744073709551616');
    expect(fromGlide(undefined)).toBeNull();
  });
});
