// The `redis.url` option, checked before ioredis reads it. ioredis takes any string: one whose scheme is not
// redis: or rediss: (`http://host:6379`, a typo like `reddis://`) becomes the Unix socket path `//host:6379`,
// so the app started, warned of a connection failure and failed every policy open. The start stops instead.

/** What `redis.url` may be, for the error that refuses another. */
const ACCEPTED =
  'redis://[[user]:password@]host[:port][/db] or rediss://… (TLS), a bare host:port, or a Unix socket as ' +
  'unix:///path/to/redis.sock or /path/to/redis.sock (with ?password=…&db=… when needed)';

/** `scheme:` at the start of a URL; `localhost:6379` has none (what follows the colon is a port). */
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):(?!\d+(?:[/?#]|$))/;

/** What a scheme that is not accepted most likely means. */
const HINTS: Partial<Record<string, string>> = {
  http: ' (an HTTP URL: the address of another service?)',
  https: ' (an HTTP URL: the address of another service?)',
  valkey: ' (Valkey speaks the Redis protocol: write redis://)',
  valkeys: ' (Valkey speaks the Redis protocol: write rediss://)',
};

/** The URL for an error message: its user information and any `password=` parameter masked. */
export function maskedUrl(url: string): string {
  return url.replace(/^([^/?#]*\/\/)[^/?#]*@/, '$1***@').replace(/([?&]password=)[^&#]*/gi, '$1***');
}

function refuse(url: string, problem: string): never {
  throw new TypeError(`nest-rate-limit: option "redis.url" (${maskedUrl(url)}) ${problem}. Accepted: ${ACCEPTED}.`);
}

/**
 * The string ioredis is given for `redis.url`: the URL as it is, or a `unix:` URL as the socket path ioredis
 * reads. Throws, naming the scheme found and what is accepted (never the password), for any other scheme, and
 * for a bare host:port followed by a path (ioredis would read `localhost:6379/0` as the socket path `/0`).
 * @example redisUrlArgument('unix:///run/redis.sock?db=2') === '/run/redis.sock?db=2'
 */
export function redisUrlArgument(url: string): string {
  if (url.startsWith('/')) return url; // an absolute socket path, or `//host:port` (redis: implied)
  const scheme = SCHEME.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) return bareAddress(url);
  const rest = url.slice(scheme.length + 1);
  if (scheme === 'redis' || scheme === 'rediss') {
    if (!rest.startsWith('//')) refuse(url, `has no // after "${scheme}:" (write ${scheme}://host:port)`);
    // In lower case: ioredis turns TLS on only for a URL that starts with "rediss://" as written.
    return `${scheme}:${rest}`;
  }
  if (scheme === 'unix') {
    // unix:///path or unix:/path: the path is all there is (credentials and db go in the query).
    const path = rest.startsWith('///') ? rest.slice(2) : rest;
    if (!path.startsWith('/') || path.startsWith('//')) {
      refuse(url, 'is not a socket path: a unix: URL is unix:///path/to/redis.sock, with no host');
    }
    return path;
  }
  const hint = HINTS[scheme] ?? '';
  return refuse(url, `has the scheme "${scheme}:", which is not a Redis URL${hint}`);
}

/** `host`, `host:port` or `port`, with an optional query; a path after it is refused. */
function bareAddress(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(`redis://${url}`);
  } catch {
    return refuse(url, 'is neither a URL nor host:port');
  }
  if (parsed.pathname !== '' && parsed.pathname !== '/') {
    const at = `${parsed.host}${parsed.pathname}`;
    refuse(
      url,
      `is host:port without a scheme, followed by a path: ioredis would take it for the socket path ` +
        `"${parsed.pathname}" (for a database, write redis://${at})`,
    );
  }
  return url;
}
