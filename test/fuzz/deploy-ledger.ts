import type { RateLimitDecision, ResolvedPolicy } from '../../lib/index.js';
import type { RateLimitDecisionEvent } from '../../lib/limiter/decision-events.js';
import { DENY_CACHE_MS } from '../../lib/engine/coherence/deny-cache.js';
import { quotaPeriodAt } from '../../lib/algorithms/quota/quota-period.js';
import { maxWaitMs } from '../../lib/policy/max-wait.js';
import { rateLimitHeaders } from '../../lib/responses/rate-limit-headers.js';
import { chosenWait } from '../../lib/responses/retry-after.js';
import { type Admission, violations } from '../support/history.js';

/** Who answered: the instance, the version of the policy it runs, and what it was asked. */
export interface Asker {
  readonly instance: number;
  readonly version: number;
  readonly policy: ResolvedPolicy;
  /** The cost asked: a denial of Infinity is a wait only when the cost fits the capacity. */
  readonly cost: number;
  readonly what: string;
}

/** An admission whose cost a settlement may lower (to the actual cost, never above the estimate). */
interface Counted extends Admission {
  cost: number;
}

/**
 * What the fleet answered, checked as it answers (the waits) and at the end of a run (the admissions):
 *
 * - every decision's `retryAfterMs`, and its `resetMs` (the `t` of the RateLimit header of an admission), is at
 *   most maxWaitMs(policy of the deciding instance) — a cost that never fits may wait Infinity;
 * - every answer from the cache of denials comes within DENY_CACHE_MS (real time) of an operator's change, unless
 *   the store denied that key again since;
 * - the admissions of each version (each a shape of its own, so state of its own) under each key, between two
 *   resets or operator actions, stay within that version's own bound (test/support/history.ts): one budget of the
 *   old shape plus one of the new during a deploy. Each is known to lie within `skewMs` of the deciding instance's
 *   clock (the instances' clocks differ by at most that much), and a settled reservation counts at its actual cost.
 */
export class DeployLedger {
  private epoch = 0;
  private readonly admitted = new Map<string, { version: number; rows: Counted[] }>();
  /** Real times of the operator's changes. */
  private readonly operatorAt: number[] = [];
  /** Per instance and key, the real time of the store's latest denial. */
  private readonly storeDeniedAt = new Map<string, number>();

  constructor(
    private readonly versions: readonly ResolvedPolicy[],
    private readonly skewMs: number,
    private readonly realNow: () => number,
  ) {}

  /** What was found wrong, as it was answered (an onDecision hook's throw would be logged, not seen). */
  private readonly problems: string[] = [];

  problem(description: string): void {
    this.problems.push(description);
  }

  /** Throws what was found wrong so far. */
  assertNoProblem(): void {
    if (this.problems.length > 0) throw new Error(this.problems.join('\n'));
  }

  /** Checks a decision's wait against the deciding policy's maximum. */
  decision(asker: Asker, d: Pick<RateLimitDecision, 'allowed' | 'retryAfterMs' | 'resetMs'>): void {
    const most = maxWaitMs(asker.policy);
    const neverFits = asker.cost > asker.policy.capacity && d.retryAfterMs === Infinity;
    const problems = [
      !neverFits && d.retryAfterMs > most ? `retryAfterMs ${d.retryAfterMs}` : undefined,
      d.resetMs > most ? `resetMs ${d.resetMs}` : undefined,
    ].filter((p) => p !== undefined);
    for (const [name, value] of headersOf(asker.policy, d)) {
      const seconds = /t=(\d+)/.exec(value)?.[1] ?? (name === 'Retry-After' ? value : undefined);
      if (seconds !== undefined && Number(seconds) * 1000 > Math.ceil(most / 1000) * 1000) {
        problems.push(`${name}: ${value}`);
      }
    }
    if (problems.length > 0) {
      this.problem(
        `${asker.what} on instance ${asker.instance} (version ${asker.version}: ${describe(asker.policy)}, cost ` +
          `${asker.cost}): ${problems.join(', ')} > maxWaitMs ${most} (allowed: ${d.allowed})`,
      );
    }
  }

  /** An onDecision event of an instance (or a guard's decision): its wait, and the cache of denials' trust. */
  event(
    asker: Omit<Asker, 'cost' | 'what'>,
    e: Pick<RateLimitDecisionEvent, 'source' | 'key' | 'cost' | 'allowed' | 'retryAfterMs'>,
  ): void {
    const what = `an onDecision event (source ${e.source}, key ${e.key})`;
    this.decision({ ...asker, cost: e.cost, what }, { ...e, resetMs: 0 });
    const id = `${asker.instance}\n${asker.version}\n${e.key}`;
    if (e.source === 'store' && !e.allowed) this.storeDeniedAt.set(id, this.realNow());
    if (e.source !== 'deny-cache') return;
    const now = this.realNow();
    const change = this.operatorAt.filter((at) => at <= now).pop();
    const since = this.storeDeniedAt.get(id) ?? -Infinity;
    if (change !== undefined && since < change && now - change > DENY_CACHE_MS) {
      this.problem(
        `instance ${asker.instance} answered key ${e.key} from its cache of denials ${now - change} ms (real time) ` +
          `after an operator's change outside the module (denyCacheMs ${DENY_CACHE_MS})`,
      );
    }
  }

  /** An operator's change outside the module: the admissions before it are held to their bound apart. */
  operator(): void {
    this.operatorAt.push(this.realNow());
    this.epoch++;
  }

  /** A reset through the module: the same for the admissions. */
  reset(): void {
    this.epoch++;
  }

  /** Counts an admission of `cost` at the deciding instance's time `atMs`; a settlement may lower it later. */
  admit(version: number, key: string, atMs: number, cost: number): Counted {
    const id = `${this.epoch}\n${version}\n${key}`;
    let entry = this.admitted.get(id);
    if (entry === undefined) this.admitted.set(id, (entry = { version, rows: [] }));
    const row = { from: atMs - this.skewMs, to: atMs + this.skewMs, cost };
    entry.rows.push(row);
    return row;
  }

  /** What the admissions break: a line per window, interval or period where a version admitted too much. */
  admissionViolations(): string[] {
    const found: string[] = [];
    for (const [id, { version, rows }] of this.admitted) {
      const policy = this.versions[version] as ResolvedPolicy;
      for (const v of boundViolations(policy, rows))
        found.push(`${id.replaceAll('\n', '/')} ${describe(policy)}: ${v}`);
    }
    return found;
  }
}

/**
 * The bound of the docs for one shape's admissions. A fixed window from the first request may begin anywhere:
 * any span of a window holds at most two of its windows. A quota: its limit in each calendar period.
 */
function boundViolations(policy: ResolvedPolicy, rows: readonly Admission[]): string[] {
  if (policy.anchor === 'first-request') {
    return violations({ ...policy, algorithm: 'sliding-window-log', limit: 2 * policy.limit }, rows);
  }
  const quota = policy.quota;
  if (quota === undefined) return violations(policy, rows);
  const periods = new Map<number, number>();
  for (const { from, to, cost } of rows) {
    const { startMs, endMs } = quotaPeriodAt(quota.period, quota.timeZone, from);
    if (to < endMs) periods.set(startMs, (periods.get(startMs) ?? 0) + cost);
  }
  return [...periods]
    .filter(([, used]) => used > policy.limit)
    .map(([start, used]) => `period from ${start} admitted ${used} > ${policy.limit}`);
}

/** The headers a response of this decision carries: RateLimit (its `t`), and Retry-After when denied. */
function headersOf(policy: ResolvedPolicy, d: Pick<RateLimitDecision, 'allowed' | 'retryAfterMs' | 'resetMs'>) {
  const decision: RateLimitDecision = { ...d, policy: policy.name, limit: policy.capacity, remaining: 0 };
  const headers = rateLimitHeaders('ietf', [policy], [decision]).filter(([name]) => name === 'RateLimit');
  const retryAfter = d.allowed ? null : chosenWait({ denials: [decision] }).retryAfter;
  return retryAfter === null ? headers : [...headers, ['Retry-After', String(retryAfter)] as [string, string]];
}

/** A policy's shape and limits, for a report. */
export function describe(policy: ResolvedPolicy): string {
  const { algorithm, limit, capacity, windowMs, anchor, quota, blockMs } = policy;
  const shape =
    quota === undefined
      ? `${windowMs} ms${anchor === undefined ? '' : ` from the ${anchor}`}`
      : `${quota.period} ${quota.timeZone}`;
  const block = blockMs === undefined ? '' : `, block ${blockMs} ms`;
  return `${algorithm} ${limit} per ${shape}${capacity === limit ? '' : `, burst ${capacity}`}${block}`;
}
