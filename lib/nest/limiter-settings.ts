import type { Logger } from '@nestjs/common';

import { compileTrust, isTrustAll, type TrustFn } from '../keys/client-ip.js';
import { compileList } from '../lists/address-list.js';
import type { ModuleLists } from '../limiter/screening.js';
import type { FailMode, RateLimitKey, RateLimitMode } from '../policy/policy.types.js';
import { DENY_CACHE_MS } from '../engine/coherence/deny-cache.js';
import { type SheddingSettings, sheddingSettings } from '../shedding/shedding-options.js';
import { DEFAULT_TIMEOUT_MS } from '../stores/store-timeout.js';
import { checkOptionFields, fieldNames } from '../util/unknown-fields.js';
import type { RateLimitErrors, RateLimitHeaders, RateLimitModuleOptions } from './rate-limit.options.js';

/** The fields of RateLimitModuleOptions; a field not listed stops the start (a misspelt one would be ignored). */
export const MODULE_OPTIONS = fieldNames<RateLimitModuleOptions>({
  redis: true,
  postgres: true,
  store: true,
  defaults: true,
  global: true,
  headers: true,
  errors: true,
  trustProxy: true,
  ipv6Prefix: true,
  failMode: true,
  instances: true,
  mode: true,
  onDecision: true,
  timeout: true,
  denyCacheMs: true,
  key: true,
  keyPrefix: true,
  identitySecret: true,
  readableKeys: true,
  clock: true,
  user: true,
  onError: true,
  allow: true,
  deny: true,
  shedding: true,
});

const HEADER_SCHEMES: readonly RateLimitHeaders[] = ['ietf', 'legacy', 'both', 'none'];
const ERROR_FORMATS: readonly RateLimitErrors[] = ['nest', 'problem'];

/** The module's options the limiter works with, checked, with their defaults. */
export interface LimiterSettings {
  readonly headers: RateLimitHeaders;
  readonly errors: RateLimitErrors;
  readonly failMode: FailMode;
  /** How many instances share the store: 'local' fail modes default to `ceil(limit / instances)`. */
  readonly instances: number;
  readonly mode: RateLimitMode;
  readonly timeoutMs: number;
  /** How long a denial of the store answers without asking it again (the `denyCacheMs` option), in ms. */
  readonly denyCacheMs: number;
  readonly ipv6Prefix: number;
  readonly trust: TrustFn;
  readonly lists: ModuleLists;
  /** The module's `key` option, checked: the key of every policy that names none (else `'user'`). */
  readonly key: RateLimitKey | undefined;
  /** The `shedding` option, checked; undefined: off. */
  readonly shedding: SheddingSettings | undefined;
}

const option = (name: string, problem: string, value: unknown): never => {
  throw new TypeError(`nest-rate-limit: option "${name}" ${problem}, got ${JSON.stringify(value)}`);
};

const listOption = (name: 'allow' | 'deny', entries: unknown) =>
  compileList(entries, (problem) => {
    throw new TypeError(`nest-rate-limit: option "${name}": ${problem}`);
  });

/**
 * Checks the module's options at start: a bad value stops the application with an error naming the option.
 * Warns about `trustProxy: true`.
 */
export function limiterSettings(options: RateLimitModuleOptions, logger: Logger): LimiterSettings {
  const settings = checkedSettings(options);
  if (isTrustAll(settings.trust)) {
    logger.warn(
      'trustProxy is true: every X-Forwarded-For hop is believed, so any client can claim any address. ' +
        'Name your proxies instead (a hop count, CIDRs or "loopback").',
    );
  }
  return settings;
}

/**
 * The options' values checked, and their defaults, without a word in the log: the module's stores check them
 * before they connect, so that a bad value leaves no connection open (limiterSettings checks them again).
 */
export function checkedSettings(options: RateLimitModuleOptions): LimiterSettings {
  checkOptionFields(options, MODULE_OPTIONS, '');
  const headers = options.headers ?? 'ietf';
  if (!HEADER_SCHEMES.includes(headers)) option('headers', "must be 'ietf', 'legacy', 'both' or 'none'", headers);
  const errors = options.errors ?? 'nest';
  if (!ERROR_FORMATS.includes(errors)) option('errors', "must be 'nest' or 'problem'", errors);
  const failMode: FailMode = options.failMode ?? 'open';
  if (failMode !== 'open' && failMode !== 'closed' && failMode !== 'local') {
    option('failMode', "must be 'open', 'closed' or 'local'", failMode);
  }
  const instances = options.instances ?? 1;
  if (!Number.isSafeInteger(instances) || instances < 1) {
    option('instances', 'must be an integer >= 1 (the app instances that share the store)', instances);
  }
  const mode: RateLimitMode = options.mode ?? 'enforce';
  if (mode !== 'enforce' && mode !== 'shadow') option('mode', "must be 'enforce' or 'shadow'", mode);
  if (options.onDecision !== undefined && typeof options.onDecision !== 'function') {
    option('onDecision', 'must be a function', typeof options.onDecision);
  }
  const timeoutMs = options.timeout ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) option('timeout', 'must be an integer >= 1 (ms)', timeoutMs);
  const denyCacheMs = options.denyCacheMs ?? DENY_CACHE_MS;
  if (!Number.isSafeInteger(denyCacheMs) || denyCacheMs < 0) {
    option('denyCacheMs', 'must be an integer >= 0 (ms; 0 asks the store every time)', denyCacheMs);
  }
  const ipv6Prefix = options.ipv6Prefix ?? 64;
  if (!Number.isInteger(ipv6Prefix) || ipv6Prefix < 1 || ipv6Prefix > 128) {
    option('ipv6Prefix', 'must be an integer from 1 to 128', ipv6Prefix);
  }
  const trust = compileTrust(options.trustProxy);
  const lists = { allow: listOption('allow', options.allow), deny: listOption('deny', options.deny) };
  const key = options.key;
  if (key !== undefined && key !== 'ip' && key !== 'user' && typeof key !== 'function') {
    option('key', "must be 'ip', 'user' or a function of the request (ctx, id) => string | undefined", key);
  }
  const shedding = sheddingSettings(options.shedding);
  return {
    headers,
    errors,
    failMode,
    instances,
    mode,
    timeoutMs,
    denyCacheMs,
    ipv6Prefix,
    trust,
    lists,
    key,
    shedding,
  };
}
