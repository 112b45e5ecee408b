import { GLIDE_DECODER_STRING, type GlideCommon, type GlideRoute } from './glide-types.js';
import { RedisReplyError } from './redis-driver.js';

/**
 * One command as a string-decoded customCommand (routed on a Cluster), its reply shaped as ioredis gives it
 * (unless `shaped` is false).
 */
export async function send(
  client: GlideCommon,
  args: readonly string[],
  route: GlideRoute | undefined,
  shaped = true,
): Promise<unknown> {
  try {
    const reply = await client.customCommand([...args], {
      decoder: GLIDE_DECODER_STRING,
      ...(route !== undefined && { route }),
    });
    return shaped ? fromGlide(reply) : reply;
  } catch (error) {
    throw asReplyError(error);
  }
}

/**
 * A GLIDE reply as ioredis (RESP2) gives it: a RESP3 map (GLIDE's `[{ key, value }]`) as a flat array, a set as
 * an array, a boolean as 1 or null (Lua's true and false), a big number as a number (or its digits when it is
 * not exact as one), an error element as a RedisReplyError, bytes as a string.
 */
export function fromGlide(reply: unknown): unknown {
  if (reply === null || reply === undefined) return null;
  if (typeof reply === 'string' || typeof reply === 'number') return reply;
  if (typeof reply === 'boolean') return reply ? 1 : null;
  if (typeof reply === 'bigint') {
    return reply <= BigInt(Number.MAX_SAFE_INTEGER) && reply >= BigInt(Number.MIN_SAFE_INTEGER)
      ? Number(reply)
      : String(reply);
  }
  if (Buffer.isBuffer(reply)) return reply.toString();
  if (reply instanceof Error) return asReplyError(reply);
  if (reply instanceof Set) return [...reply].map(fromGlide);
  if (Array.isArray(reply)) {
    return reply.flatMap((element: unknown) =>
      isMapEntry(element) ? [fromGlide(element.key), fromGlide(element.value)] : [fromGlide(element)],
    );
  }
  if (reply instanceof Map) return [...reply].flatMap(([key, value]) => [fromGlide(key), fromGlide(value)]);
  if (typeof reply === 'object') return Object.entries(reply).flatMap(([key, value]) => [key, fromGlide(value)]);
  return reply;
}

const isMapEntry = (element: unknown): element is { key: unknown; value: unknown } =>
  typeof element === 'object' &&
  element !== null &&
  !Array.isArray(element) &&
  !Buffer.isBuffer(element) &&
  !(element instanceof Error) &&
  'key' in element &&
  'value' in element;

/** GLIDE's names of the server's error codes (redis-rs' ErrorKind), and the codes Redis sends. */
const ERROR_CODES: Readonly<Record<string, string>> = {
  ResponseError: 'ERR',
  ExecAbortError: 'EXECABORT',
  BusyLoadingError: 'LOADING',
  NoScriptError: 'NOSCRIPT',
  Moved: 'MOVED',
  Ask: 'ASK',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
  ReadOnly: 'READONLY',
  NotBusy: 'NOTBUSY',
};

/**
 * An error the server answered with, as a RedisReplyError with the server's message ("NOSCRIPT No matching
 * script...", "ERR Function not found", "WRONGTYPE Operation against..."); any other error (a timeout, a
 * connection lost, a client closed) as it is. GLIDE throws both as a RequestError; its message tells them apart:
 * "An error was signalled by the server: - <kind>: <detail>" for a code it knows, "<CODE>: <detail>" for another.
 */
export function asReplyError(error: unknown): unknown {
  if (!(error instanceof Error) || error.constructor?.name !== 'RequestError') return error;
  const known = /^An error was signalled by the server: - (\w+): ([\s\S]*)$/.exec(error.message);
  if (known !== null) {
    const [, kind = '', detail = ''] = known;
    const code = ERROR_CODES[kind];
    return new RedisReplyError(code === undefined ? `${kind}: ${detail}` : `${code} ${detail}`, { cause: error });
  }
  const other = /^([A-Z][A-Z0-9_-]*): ([\s\S]*)$/.exec(error.message);
  if (other !== null) return new RedisReplyError(`${other[1]} ${other[2]}`, { cause: error });
  return error;
}
