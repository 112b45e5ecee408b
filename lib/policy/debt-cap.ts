import type { Logger } from '../util/logger.js';
import { DEBT_CAP_CAPACITIES } from './max-wait.js';
import type { ResolvedPolicy } from './policy.types.js';

/**
 * The most a settlement of `estimate` units can charge whole: the estimate, then the capacity and the debt cap
 * (DEBT_CAP_CAPACITIES capacities owed past it). A key charged more owes no more than that (the stores clamp
 * the state there), so a larger actual cost is a mistake of the settle function (bytes counted for tokens),
 * not usage: it is clamped where it is given, and reported.
 * @example mostActual({ capacity: 1000, ... }, 400) // 2400
 */
export function mostActual(policy: Pick<ResolvedPolicy, 'capacity'>, estimate: number): number {
  return estimate + (1 + DEBT_CAP_CAPACITIES) * policy.capacity;
}

/**
 * Clamps the actual costs of settlements at mostActual, and says so in the log once per policy (with where it
 * was given and the value, never the identity: a key may be an API key or an address).
 */
export class ActualCostCap {
  private readonly reported = new Set<string>();

  constructor(private readonly logger: Logger) {}

  /** `actual`, or mostActual when it is more; `where` is `Class.method` or the API that was called. */
  clamp(policy: ResolvedPolicy, estimate: number, actual: number, where: string): number {
    const most = mostActual(policy, estimate);
    // a capacity not known here (a limit per request not resolved) is no bound
    if (!(actual > most)) return actual;
    if (!this.reported.has(policy.name)) {
      this.reported.add(policy.name);
      this.logger.warn(
        `Policy "${policy.name}" on ${where}: the actual cost ${actual} is more than the estimate (${estimate}) ` +
          `and ${1 + DEBT_CAP_CAPACITIES} capacities (${policy.capacity} each) together, so ${most} is charged ` +
          `instead: a key owes at most ${DEBT_CAP_CAPACITIES} capacity past its own (the debt cap), so that no ` +
          'wait is longer than the policy could require. A settle function that counts bytes or characters ' +
          'where the policy counts tokens does this. (Logged once per policy.)',
      );
    }
    return most;
  }
}
