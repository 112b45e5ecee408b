import type { RateLimitMetrics } from '../metrics/otel-metrics.js';
import { MAX_CLOCK_SKEW_MS } from '../policy/max-wait.js';
import type { RateLimitDecision } from '../policy/policy.types.js';
import { overlongWait } from '../stores/decisions.js';
import type { Logger } from '../util/logger.js';

/**
 * Reports the decisions whose store asked for a longer wait than their policy ever could, past the clock skew
 * allowed (MAX_CLOCK_SKEW_MS): state written by an instance whose clock runs ahead, or of another shape (an
 * operator's restore, a version that wrote otherwise). The stores already answered them with the policy's
 * longest wait (lib/stores/decisions.ts); this says so: the `rate_limit.state.overlong` counter for each, and
 * one warning per policy for the life of the process, naming it (never a key).
 */
export class OverlongWaits {
  private readonly warned = new Set<string>();

  constructor(
    private readonly logger: Logger,
    private readonly metrics: () => RateLimitMetrics | undefined,
  ) {}

  /** Looks at the decisions of a store call. */
  check(decisions: readonly RateLimitDecision[]): void {
    for (const decision of decisions) {
      const askedMs = overlongWait(decision);
      if (askedMs === undefined || askedMs - decision.retryAfterMs <= MAX_CLOCK_SKEW_MS) continue;
      const { policy } = decision;
      this.metrics()?.overlongWait(policy);
      if (this.warned.has(policy)) continue;
      this.warned.add(policy);
      this.logger.warn(
        `Rate limiter policy ${policy}: the store asked for a wait of ${askedMs} ms, longer than the policy ever ` +
          `could (${decision.retryAfterMs} ms) by more than the ${MAX_CLOCK_SKEW_MS} ms of clock skew allowed: ` +
          'state written by an instance whose clock runs ahead, or state of another shape; answered with the ' +
          "policy's longest wait (counted in rate_limit.state.overlong; said once per policy)",
      );
    }
  }
}
