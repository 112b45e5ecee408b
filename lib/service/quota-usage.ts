import { quotaPeriodAt } from '../algorithms/quota/quota-period.js';
import type { DecisionEngine } from '../engine/decision-engine.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { ResolvedPolicy } from '../policy/policy.types.js';
import { elementAt } from '../util/element-at.js';
import type { ServiceArguments } from './service-arguments.js';
import type { ServiceCalls } from './service-calls.js';

/** A quota limit no usage reaches, to read usage through peek: 2^52. */
const USAGE_PROBE_LIMIT = 2 ** 52;

/**
 * RateLimitService.usage: how much of quota `p` `key` has used in the calendar period that holds `at` (default
 * now), read from the store's durable usage where it keeps one (PostgreSQL), else by a peek of the current
 * period under a limit nothing reaches (an earlier period reads as 0).
 */
export async function quotaUsage(
  engine: DecisionEngine,
  { args, calls }: { args: ServiceArguments; calls: ServiceCalls },
  p: ResolvedPolicy,
  key: string,
  at?: Date,
): Promise<{ used: number; limit: number | undefined; periodStart: Date; periodEnd: Date }> {
  if (p.quota === undefined) {
    throw new RateLimitPolicyError('usage() is for quota policies (algorithm: "quota")', {
      policy: p.name,
      field: 'algorithm',
      where: 'RateLimitService',
    });
  }
  const checked = args.key(key, p);
  const nowMs = engine.now();
  const atMs = at?.getTime() ?? nowMs;
  if (!Number.isFinite(atMs)) {
    throw new RateLimitPolicyError(`at must be a valid Date, got ${String(at)}`, {
      policy: p.name,
      where: 'RateLimitService',
    });
  }
  const { startMs, endMs } = quotaPeriodAt(p.quota.period, p.quota.timeZone, atMs);
  const period = { periodStart: new Date(startMs), periodEnd: new Date(endMs) };
  // A per-request limit resolves to NaN: no number to report unless the store kept the last one applied.
  const declared = Number.isNaN(p.limit) ? undefined : p.limit;
  const store = engine.quotaStore;
  if (store.quotaUsage !== undefined) {
    const usage = await calls.call(
      [p.name],
      () => (store.quotaUsage as NonNullable<typeof store.quotaUsage>).call(store, p, checked, startMs),
      p,
    );
    const stored = usage.limit === undefined || Number.isNaN(usage.limit) ? undefined : usage.limit;
    return { used: usage.used, limit: stored ?? declared, ...period };
  }
  if (quotaPeriodAt(p.quota.period, p.quota.timeZone, nowMs).startMs !== startMs)
    return { used: 0, limit: declared, ...period };
  // Peek under a limit nothing reaches: what is used is that limit minus what remains.
  const probe = engine.withLimit(p, USAGE_PROBE_LIMIT);
  const decisions = await calls.call([p.name], (s) => s.peek([{ policy: probe, key: checked }]), p);
  const decision = elementAt(decisions, 0, "the store's reply to peek");
  return { used: USAGE_PROBE_LIMIT - decision.remaining, limit: declared, ...period };
}
