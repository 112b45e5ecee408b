import type { ExecutionContext, Logger } from '@nestjs/common';

import type { PlanEntry } from '../planning/route-planner.js';
import type { DecisionEvents } from './decision-events.js';

/** How many invocations in a row, from the first, a key function may skip before the policy is reported. */
export const SKIP_REPORT_AFTER = 100;

/**
 * Watches the policies whose key functions skip invocations (return undefined): each skip goes to `onDecision`
 * and the metrics (`skipped`), and a policy that has skipped every one of the first SKIP_REPORT_AFTER
 * invocations it saw is reported once in the log, since it has never applied (a key function that reads a
 * field no request has, say). Skipping on purpose stays quiet as soon as the policy applies once. Only
 * function keys skip, so policies keyed 'ip' or 'user' never reach here.
 */
export class SkipWatch {
  /** Per entry (one per handler and policy, made at start): the skips before it first applied. */
  private readonly skips = new WeakMap<PlanEntry, number>();
  /** Entries that applied, or were reported: nothing left to watch. */
  private readonly settled = new WeakSet<PlanEntry>();

  constructor(
    private readonly logger: Logger,
    private readonly events: DecisionEvents,
  ) {}

  /** The key function of `entry` gave an identity: the policy applies, and is no longer watched. */
  applied(entry: PlanEntry): void {
    if (this.settled.has(entry)) return;
    this.settled.add(entry);
    this.skips.delete(entry);
  }

  /** The key function of `entry` returned undefined for this invocation. */
  skipped(entry: PlanEntry, ctx: ExecutionContext, where: string): void {
    this.events.skipped(entry.planned.policy, ctx);
    if (this.settled.has(entry)) return;
    const skips = (this.skips.get(entry) ?? 0) + 1;
    if (skips < SKIP_REPORT_AFTER) {
      this.skips.set(entry, skips);
      return;
    }
    this.skips.delete(entry);
    this.settled.add(entry);
    this.logger.warn(
      `Policy "${entry.planned.policy.name}" on ${where} has applied to none of the ${skips} requests it saw: ` +
        'its key function returned undefined for each, and undefined skips the policy. That is meant for ' +
        'requests the policy does not count (a login without a username, say); for every request it usually ' +
        "means the function reads a field no request has (Node lower-cases header names: headers['x-api-key']). " +
        '(Logged once per policy and handler.)',
    );
  }
}
