import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';

/** Which rate-limit header fields responses carry. docs/responses.md, "Header schemes", shows every value. */
export type RateLimitHeaders = 'ietf' | 'legacy' | 'both' | 'none';

/** Whole seconds, rounded up, for a header: a client told "0" would retry at once. */
export const toSeconds = (ms: number): number => Math.ceil(ms / 1000);

/**
 * `Retry-After` (and `retryAfter` in bodies and errors) of a wait in ms: whole seconds, rounded up, at least 1;
 * null when the wait is Infinity (a cost that can never fit: retrying cannot help).
 */
export const retryAfterSeconds = (ms: number): number | null =>
  Number.isFinite(ms) ? Math.max(1, toSeconds(ms)) : null;

/** Seconds a client waits before the quota of a decision is available again (`t` and X-RateLimit-Reset). */
function secondsUntilAvailable(d: RateLimitDecision): number {
  if (!d.allowed && Number.isFinite(d.retryAfterMs)) return toSeconds(d.retryAfterMs);
  return toSeconds(d.resetMs);
}

/**
 * `RateLimit-Policy` items: `"name";q=<capacity>;w=<seconds>`, where w is the time the policy takes to go
 * from empty to full. For the window algorithms that is the window; for token bucket and GCRA it is
 * burst × window / limit, so that q / w is always the sustained rate and q the largest burst. A concurrency
 * limit has no window: `"name";q=<limit>;qu="concurrent-requests"`.
 */
export function policyItem(policy: ResolvedPolicy): string {
  let item = policyItems.get(policy);
  if (item === undefined) {
    const fullMs = (policy.capacity * policy.windowMs) / policy.limit;
    item =
      policy.algorithm === 'concurrency'
        ? `"${policy.name}";q=${policy.capacity};qu="concurrent-requests"`
        : `"${policy.name}";q=${policy.capacity};w=${Math.max(1, toSeconds(fullMs))}`;
    policyItems.set(policy, item);
  }
  return item;
}

const policyItems = new WeakMap<ResolvedPolicy, string>();

/**
 * The `RateLimit-Policy` field of `policies`: of one policy its item (made once per policy), of several the
 * last list joined, remembered by its first policy while the same policies come again (a route's plan).
 */
function policyField(policies: readonly ResolvedPolicy[]): string {
  const first = policies[0] as ResolvedPolicy;
  if (policies.length === 1) return policyItem(first);
  const known = policyFields.get(first);
  if (known !== undefined && sameList(known.policies, policies)) {
    return known.field;
  }
  let field = policyItem(first);
  for (let i = 1; i < policies.length; i++) field += `, ${policyItem(policies[i] as ResolvedPolicy)}`;
  policyFields.set(first, { policies: policies.slice(), field });
  return field;
}

const policyFields = new WeakMap<
  ResolvedPolicy,
  { readonly policies: readonly ResolvedPolicy[]; readonly field: string }
>();

function sameList(a: readonly ResolvedPolicy[], b: readonly ResolvedPolicy[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The `RateLimit` field of `decisions`: `"name";r=<remaining>;t=<seconds>` each, comma-separated. */
function rateLimitField(decisions: readonly RateLimitDecision[]): string {
  let field = '';
  for (let i = 0; i < decisions.length; i++) {
    const d = decisions[i] as RateLimitDecision;
    if (i > 0) field += ', ';
    field += `"${d.policy}";r=${d.remaining};t=${secondsUntilAvailable(d)}`;
  }
  return field;
}

/** The decision that matters most to the client: a denial with the longest wait, else the fewest remaining. */
export function mostRestrictive(decisions: readonly RateLimitDecision[]): RateLimitDecision {
  let worst = decisions[0];
  if (worst === undefined) throw new Error('nest-rate-limit: mostRestrictive needs at least one decision');
  for (const d of decisions) {
    if (worst.allowed !== d.allowed) {
      if (!d.allowed) worst = d;
      continue;
    }
    if (!d.allowed ? d.retryAfterMs > worst.retryAfterMs : d.remaining < worst.remaining) worst = d;
  }
  return worst;
}

/**
 * The rate-limit header fields of one response, in the chosen scheme. `policies[i]` is the policy of
 * `decisions[i]`.
 */
export function rateLimitHeaders(
  scheme: RateLimitHeaders,
  policies: readonly ResolvedPolicy[],
  decisions: readonly RateLimitDecision[],
): [string, string][] {
  if (scheme === 'none' || decisions.length === 0) return [];
  // Literals, not pushes on an empty array (which would give it room for 17 fields).
  const out: [string, string][] =
    scheme === 'ietf' || scheme === 'both'
      ? [
          ['RateLimit-Policy', policyField(policies)],
          ['RateLimit', rateLimitField(decisions)],
        ]
      : [];
  if (scheme === 'legacy' || scheme === 'both') {
    const worst = mostRestrictive(decisions);
    out.push(['X-RateLimit-Limit', String(worst.limit)]);
    out.push(['X-RateLimit-Remaining', String(worst.remaining)]);
    out.push(['X-RateLimit-Reset', String(secondsUntilAvailable(worst))]);
  }
  return out;
}
