import type { Logger } from '@nestjs/common';

import { ThrottledLog } from '../util/throttled-log.js';

/** How often, at most, the drops of one policy are logged. */
export const DROP_LOG_INTERVAL_MS = 60_000;

/**
 * Logs dropped events at most once per policy and reason per DROP_LOG_INTERVAL_MS: a flood of events over the
 * limit would otherwise write one line per event. The next line says how many drops went unlogged meanwhile.
 * Entries are per policy name (a bounded set: policies are declared at start-up).
 */
export class DropLog {
  private readonly log: ThrottledLog;

  constructor(
    private readonly logger: Logger,
    now: () => number,
  ) {
    this.log = new ThrottledLog(DROP_LOG_INTERVAL_MS, now);
  }

  note(reason: string, line: () => string): void {
    this.log.note(reason, (held) =>
      this.logger.warn(
        held === 0 ? line() : `${line()} (${held} more dropped for the same reason since the last report, not logged)`,
      ),
    );
  }
}
