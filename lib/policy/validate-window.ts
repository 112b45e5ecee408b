import { emissionUs, MAX_LEAD_US } from './emission.js';
import { fieldNames } from '../util/unknown-fields.js';
import { checkLimitField, COMMON_FIELDS, type Fail, resolveCommonFields } from './common-fields.js';
import type { RateLimitWindowPolicy, ResolvedPolicy } from './policy.types.js';
import { checkGcraRate, checkUnits, describeValue } from './value-checks.js';
import { shapeTag } from './state-shape.js';
import { parseWindow } from './window.js';

/** The fields of a policy of a window-based algorithm (every algorithm but quota). */
export const WINDOW_FIELDS = fieldNames<RateLimitWindowPolicy>({
  ...COMMON_FIELDS,
  window: true,
  burst: true,
  anchor: true,
});

/** Checks a policy of a window-based algorithm (its name and algorithm already checked) and resolves it. */
export function validateWindowPolicy(policy: RateLimitWindowPolicy, name: string, fail: Fail): ResolvedPolicy {
  const { limit, burst } = policy;
  checkLimitField(limit, fail);
  const windowMs = parseWindow(policy.window);
  if (windowMs === undefined) {
    fail(
      'window',
      `must be a whole number of milliseconds >= 1 or a duration like '500ms', '10s', '1m', '1h', '1d', got ${describeValue(policy.window)}`,
    );
  }
  const { anchor } = policy;
  checkAnchor(policy, fail);
  const firstRequest = anchor === 'first-request' ? anchor : undefined;
  const bucket = policy.algorithm === 'token-bucket' || policy.algorithm === 'gcra';
  if (burst !== undefined) {
    if (!bucket) fail('burst', `applies only to token-bucket and gcra, not to ${policy.algorithm}`);
    if (typeof burst !== 'function' && (!Number.isSafeInteger(burst) || burst < 1)) {
      fail('burst', `must be an integer >= 1 or a function of the request, got ${describeValue(burst)}`);
    }
  }
  // A limit or burst that is a function is decided per request (RequestResolver); NaN stands for it here.
  const staticLimit = typeof limit === 'number' ? limit : NaN;
  const staticBurst = typeof burst === 'function' ? NaN : burst;
  const capacity = bucket ? (staticBurst ?? staticLimit) : staticLimit;
  // The algorithms count in units of 1/windowMs of a request so that every step is exact integer math. Their
  // intermediate values reach a few times capacity × windowMs (two windows of a sliding counter seen from a
  // clock that stepped back, a GCRA key seen from behind), and must stay below 2^53 in Lua and TypeScript.
  const problem = checkUnits(Math.max(capacity, staticLimit), windowMs as number);
  if (problem !== undefined) {
    // the field to change: the burst when the limit alone fits
    fail(
      capacity > staticLimit && checkUnits(staticLimit, windowMs as number) === undefined ? 'burst' : 'limit',
      problem,
    );
  }
  if (policy.algorithm === 'gcra') checkGcra(staticLimit, capacity, windowMs as number, fail);
  const common = resolveCommonFields(policy, staticLimit, fail);
  // the local fallback decides a GCRA policy at its local limit: a rate its µs interval must hold as well
  if (policy.algorithm === 'gcra' && common.localLimit !== undefined) {
    failOn('localLimit', checkGcraRate(common.localLimit, windowMs as number), fail);
  }
  return Object.freeze({
    name,
    id: name,
    shape: shapeTag({ algorithm: policy.algorithm, windowMs: windowMs as number, anchor: firstRequest }),
    algorithm: policy.algorithm,
    limit: staticLimit,
    windowMs: windowMs as number,
    capacity,
    ...common,
    ...(anchor === 'first-request' ? { anchor } : {}),
    source: policy,
  });
}

/** `anchor` is 'clock' or 'first-request', and only fixed windows have one. */
function checkAnchor({ anchor, algorithm }: RateLimitWindowPolicy, fail: Fail): void {
  if (anchor === undefined) return;
  if (anchor !== 'clock' && anchor !== 'first-request') {
    fail('anchor', `must be 'clock' or 'first-request', got ${describeValue(anchor)}`);
  }
  if (algorithm !== 'fixed-window') fail('anchor', `applies only to fixed-window, not to ${algorithm}`);
}

/**
 * GCRA counts in µs (gcra.ts): its window, and its burst × emission interval when both are static, must stay
 * within MAX_LEAD_US (about 71 years) for its integers to stay exact, and a static limit must be one its
 * whole-µs emission interval holds (checkGcraRate).
 */
function checkGcra(limit: number, burst: number, windowMs: number, fail: Fail): void {
  if (1000 * windowMs > MAX_LEAD_US) {
    fail('window', `must not exceed ${MAX_LEAD_US / 1000} ms (about 71 years) for gcra, got ${windowMs}`);
  }
  if (!Number.isNaN(limit)) failOn('limit', checkGcraRate(limit, windowMs), fail);
  if (Number.isNaN(limit) || Number.isNaN(burst)) return;
  const leadUs = burst * emissionUs(limit, windowMs);
  if (leadUs > MAX_LEAD_US) {
    fail(
      'burst',
      `burst × emission interval (window / limit) must not exceed 2^51 µs (about 71 years) for gcra; got ${burst} × ` +
        `${emissionUs(limit, windowMs)} µs: lower burst or window, or raise limit`,
    );
  }
}

/** Fails on `field` with `problem`, if there is one. */
function failOn(field: string, problem: string | undefined, fail: Fail): void {
  if (problem !== undefined) fail(field, problem);
}
