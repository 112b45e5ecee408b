import { RateLimitStoreTimeoutError } from '../store-timeout.js';
import { isReplyError, type RedisDriver } from './clients/redis-driver.js';
import { type LuaProgram, RATE_LIMIT_PROGRAM } from './rate-limit.lua.js';

/**
 * Where a test gives RedisRateLimitStore another program (its options' property of this key, which no user
 * names: the package does not export it): the conformance suite's program without its lean path.
 */
export const LUA_PROGRAM = Symbol('nest-rate-limit: Lua program');

/**
 * How one call of the store's Lua program reaches Redis: FCALL of the Redis 7 function (the twins built once,
 * not at every call) while Redis has it, loading it when it is missing; else EVALSHA of the same code, EVAL on
 * NOSCRIPT. A Cluster, a Redis before 7, or one that refuses FUNCTION LOAD (ACLs) takes the script. Connection
 * errors are said in the module's words (ioredis speaks of streams and queues, node-redis of an offline client).
 */
export class RedisLuaProgram {
  /** Whether calls go through the function; decided at the first call (or load()). */
  private functions: 'unknown' | 'yes' | 'no';
  private loadingFunction: Promise<void> | undefined;

  constructor(
    private readonly client: RedisDriver,
    private readonly program: LuaProgram = RATE_LIMIT_PROGRAM,
  ) {
    // Every master of a Cluster would need the library: the script, which travels with the call, is simpler.
    this.functions = client.isCluster ? 'no' : 'unknown';
  }

  /** Loads the function (or the script) into Redis ahead of the first request (both also load on demand). */
  async load(): Promise<void> {
    if (this.functions !== 'no') await this.loadFunction();
    if (this.functions === 'no') await this.client.command(['SCRIPT', 'LOAD', this.program.script]);
  }

  /** One call, its connection errors said in the module's words. */
  async call(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    try {
      return await this.send(keys, args);
    } catch (error) {
      throw connectionError(error, this.client.address);
    }
  }

  /**
   * FUNCTION LOAD of the library, once for all the calls that found it missing; a Redis that answers with an
   * error (before 7, ACLs) gets the script from then on.
   */
  private loadFunction(): Promise<void> {
    this.loadingFunction ??= this.client
      .command(['FUNCTION', 'LOAD', 'REPLACE', this.program.library])
      .then(
        () => {
          this.functions = 'yes';
        },
        (error: unknown) => {
          if (!isReplyError(error)) throw error;
          this.functions = 'no';
        },
      )
      .finally(() => (this.loadingFunction = undefined));
    return this.loadingFunction;
  }

  /** FCALL while the function is there (loading it when it is missing), else EVALSHA or EVAL. */
  private async send(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    if (this.functions !== 'no') {
      try {
        const reply = await this.fcall(keys, args);
        // loaded by another instance, or by this one before
        this.functions = 'yes';
        return reply;
      } catch (error) {
        if (!isReplyError(error)) throw error;
        // Not there yet, or flushed (FUNCTION FLUSH): load it and call again; no FCALL at all: the script.
        if (!error.message.includes('Function not found') && !/unknown command/i.test(error.message)) throw error;
        await this.loadFunction();
        if (this.functions === 'yes') return this.fcall(keys, args);
      }
    }
    try {
      return await this.client.evalsha(this.program.sha, keys, args);
    } catch (error) {
      // Redis restarted or its script cache was flushed: EVAL sends the script and caches it again.
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.client.eval(this.program.script, keys, args);
    }
  }

  private fcall(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.client.command(['FCALL', this.program.functionName, String(keys.length), ...keys, ...args], keys[0]);
  }
}

/**
 * A client's connection error as an outage log should read it: where the store is and what is wrong. Errors
 * Redis answered with, programming errors and timeouts (a GLIDE client's own, on the module's connection) pass as
 * they are.
 */
function connectionError(error: unknown, where: string): unknown {
  if (
    !(error instanceof Error) ||
    isReplyError(error) ||
    error instanceof TypeError ||
    error instanceof RateLimitStoreTimeoutError
  ) {
    return error;
  }
  const { message } = error;
  const problem =
    message.includes("Stream isn't writeable") || message === 'The client is offline'
      ? 'is not connected (the limiter queues no command while its connection is down)'
      : message.includes('Connection is closed') || message === 'The client is closed'
        ? 'closed the connection'
        : `failed: ${message}`;
  return new Error(`${where} ${problem}`, { cause: error });
}
