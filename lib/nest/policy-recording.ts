import { systemClock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';

import type { ResolvedPolicy } from '../policy/policy.types.js';
import type { EngineStore } from '../stores/engine-store.js';
import { type PolicyRecords, type RecordedPolicy, recordOf } from '../stores/policy-records.js';
import { withTimeout } from '../stores/store-timeout.js';

/** Records written within this long count as an instance running now (instances record at every start). */
const RUNNING_MS = 25 * 3_600_000;

/**
 * Records the declared policies in the stores that keep them (the Redis and PostgreSQL stores), so that a tool
 * without the app's code can read a key's state; and reports, once each, what the records already there say of
 * the instances beside this one: a policy another version gives another shape under the same id (the two keep
 * separate state), and instances whose identity secret differs from this one's (their keys of one identity are
 * other keys). A store that fails here is logged and the start goes on: nothing decides from the records.
 */
export async function recordPolicies(
  declared: Iterable<{ readonly policy: ResolvedPolicy }>,
  storeOf: (policy: ResolvedPolicy) => EngineStore,
  timeoutMs: number,
  logger: Logger,
): Promise<void> {
  const byStore = new Map<PolicyRecords, ResolvedPolicy[]>();
  for (const { policy } of declared) {
    const records = storeOf(policy).policies;
    if (records !== undefined) byStore.set(records, [...(byStore.get(records) ?? []), policy]);
  }
  await Promise.all(
    [...byStore].map(async ([records, policies]) => {
      try {
        // Real time, not the module's clock (a test's fake one): records of every instance are compared by it.
        const seenAt = systemClock.now();
        const ours = uniqueRecords(policies.map((p) => recordOf(p, records.check, seenAt)));
        const recorded = await withTimeout(() => records.list(), timeoutMs);
        reportNeighbours(ours, recorded, seenAt, logger);
        await withTimeout(() => records.record(ours), timeoutMs);
      } catch (error) {
        logger.warn(
          `Could not record the policies in the store (${(error as Error).message}): \`npx nest-rate-limit\` ` +
            'does not know them until an instance records them',
        );
      }
    }),
  );
}

/** One record per id and shape (a policy declared on many routes is one policy). */
function uniqueRecords(records: readonly RecordedPolicy[]): RecordedPolicy[] {
  return [...new Map(records.map((r) => [`${r.id}\n${r.shape}`, r])).values()];
}

/** Warns of running instances (recent records) whose shapes or identity secret differ from this one's. */
function reportNeighbours(
  ours: readonly RecordedPolicy[],
  recorded: readonly RecordedPolicy[],
  nowMs: number,
  logger: Logger,
): void {
  const running = recorded.filter((r) => r.seenAt >= nowMs - RUNNING_MS);
  const check = ours[0]?.check;
  if (running.some((r) => r.check !== check)) {
    logger.warn(
      'Instances with another identitySecret (or key prefix) recorded their policies in this store: their keys ' +
        'of one identity are other keys, so a client is counted twice, once under each secret. Give every ' +
        'instance the same identitySecret',
    );
  }
  for (const policy of ours) {
    const others = running.filter((r) => r.id === policy.id && r.shape !== policy.shape);
    if (others.length === 0) continue;
    const shapes = others.map((r) => `${r.shape} (recorded ${new Date(r.seenAt).toISOString()})`).join(', ');
    logger.warn(
      `Policy "${policy.name}" has the shape ${policy.shape} here, and ${shapes} on instances of another ` +
        'version beside this one: each shape keeps its own state, so until they all run one version a client ' +
        'has a budget under each',
    );
  }
}
