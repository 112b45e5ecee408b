import type { QuotaPeriod, RateLimitAlgorithm, ResolvedPolicy } from '../policy/policy.types.js';
import { jsonObject } from './overrides.js';
import type { StoredIdentities } from './storage-key.js';

/**
 * A declared policy as an instance records it in its store at start: what a tool without the app's code needs to
 * read a key's state (`npx nest-rate-limit inspect`), and what tells two versions of the app apart when they give
 * one name two shapes. `limit` and `burst` are null when they depend on the request (a function of the plan).
 */
export interface RecordedPolicy {
  readonly name: string;
  readonly id: string;
  readonly shape: string;
  readonly route?: string;
  readonly algorithm: RateLimitAlgorithm;
  readonly windowMs: number;
  readonly limit: number | null;
  /** The bucket's capacity (token bucket and GCRA); null for the others, or when it depends on the request. */
  readonly burst: number | null;
  readonly anchor?: 'first-request';
  readonly blockMs?: number;
  readonly quota?: { readonly period: QuotaPeriod; readonly timeZone: string };
  /**
   * A keyed hash of a constant under the store's identity secret: equal on every instance of one secret and key
   * prefix, so a tool can tell that its secret is not theirs (its hashes would name other keys).
   */
  readonly check: string;
  /** When an instance last recorded it, ms since the epoch. */
  readonly seenAt: number;
}

/** Where a store keeps the recorded policies. */
export interface PolicyRecords {
  /** The check value of this store's identity secret (RecordedPolicy.check). */
  readonly check: string;
  /** Records `policies` (each in place of its own earlier record: same id and shape). */
  record(policies: readonly RecordedPolicy[]): Promise<void>;
  /** Every policy recorded. */
  list(): Promise<RecordedPolicy[]>;
}

/** Records not seen for this long are dropped when an instance records its own. */
export const RECORD_KEPT_MS = 30 * 86_400_000;

/** The field of a record in a store's table of them. */
export const recordField = (policy: { readonly id: string; readonly shape: string }): string =>
  `${policy.id}\n${policy.shape}`;

/** The check value of a store's identities (RecordedPolicy.check). */
export const checkValue = (identities: StoredIdentities): string =>
  identities.of('nest-rate-limit/check', 'nest-rate-limit/check');

/** A declared policy as its store records it. */
export function recordOf(policy: ResolvedPolicy, check: string, seenAt: number): RecordedPolicy {
  const bucket = policy.algorithm === 'token-bucket' || policy.algorithm === 'gcra';
  const known = (n: number): number | null => (Number.isFinite(n) ? n : null);
  return {
    name: policy.name,
    id: policy.id,
    shape: policy.shape,
    ...(policy.route === undefined ? {} : { route: policy.route }),
    algorithm: policy.algorithm,
    windowMs: policy.windowMs,
    limit: known(policy.limit),
    burst: bucket ? known(policy.capacity) : null,
    ...(policy.anchor === undefined ? {} : { anchor: policy.anchor }),
    ...(policy.blockMs === undefined ? {} : { blockMs: policy.blockMs }),
    ...(policy.quota === undefined ? {} : { quota: { period: policy.quota.period, timeZone: policy.quota.timeZone } }),
    check,
    seenAt,
  };
}

/** A record read back, or undefined when it is not one this version reads (a later layout, a hand's edit). */
export function parseRecordedPolicy(text: unknown): RecordedPolicy | undefined {
  const r = jsonObject(text);
  if (r === undefined) return undefined;
  const count = (v: unknown) => v === null || (Number.isSafeInteger(v) && (v as number) >= 1);
  const ok =
    typeof r.name === 'string' &&
    typeof r.id === 'string' &&
    typeof r.shape === 'string' &&
    typeof r.algorithm === 'string' &&
    Number.isSafeInteger(r.windowMs) &&
    count(r.limit) &&
    count(r.burst) &&
    typeof r.check === 'string' &&
    Number.isSafeInteger(r.seenAt);
  return ok ? (r as unknown as RecordedPolicy) : undefined;
}
