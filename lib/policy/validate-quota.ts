import { checkTimeZone } from '../util/time-zone.js';
import { fieldNames } from '../util/unknown-fields.js';
import { checkLimitField, COMMON_FIELDS, type Fail, resolveCommonFields } from './common-fields.js';
import type { RateLimitQuotaPolicy, ResolvedPolicy } from './policy.types.js';
import { shapeTag } from './state-shape.js';
import { describeValue } from './value-checks.js';

/** The fields of a quota; window and burst are known too, to say why they do not apply there. */
export const QUOTA_FIELDS = fieldNames<RateLimitQuotaPolicy>({
  ...COMMON_FIELDS,
  period: true,
  timeZone: true,
  window: true,
  burst: true,
});

/** Nominal period lengths, for headers and bounds; the real periods follow the calendar. */
const PERIOD_MS = { day: 86_400_000, month: 31 * 86_400_000 } as const;

/** Checks a quota (its name and algorithm already checked) and resolves it. */
export function validateQuota(policy: RateLimitQuotaPolicy, name: string, fail: Fail): ResolvedPolicy {
  if (policy.period !== 'day' && policy.period !== 'month') {
    fail('period', `must be 'day' or 'month', got ${describeValue(policy.period)}`);
  }
  const timeZone = policy.timeZone ?? 'UTC';
  const badZone = checkTimeZone(timeZone);
  if (badZone !== undefined) fail('timeZone', badZone);
  if (policy.window !== undefined) fail('window', "is not used by quotas: a quota's period is 'day' or 'month'");
  if (policy.burst !== undefined) fail('burst', 'is not used by quotas');
  const { limit } = policy;
  checkLimitField(limit, fail);
  // A limit that is a function is decided per request; NaN here admits nothing if it were ever used as is.
  const staticLimit = typeof limit === 'number' ? limit : NaN;
  const common = resolveCommonFields(policy, staticLimit, fail);
  return Object.freeze({
    name,
    id: name,
    shape: shapeTag({
      algorithm: 'quota',
      windowMs: PERIOD_MS[policy.period],
      quota: { period: policy.period, timeZone },
    }),
    algorithm: 'quota',
    limit: staticLimit,
    windowMs: PERIOD_MS[policy.period],
    capacity: staticLimit,
    ...common,
    quota: Object.freeze({ period: policy.period, timeZone }),
    source: policy,
  });
}
