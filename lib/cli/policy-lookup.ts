import { overrideName } from '../engine/overrides/override-book.js';
import type { RateLimitPolicy, ResolvedPolicy } from '../policy/policy.types.js';
import type { PolicyRecords, RecordedPolicy } from '../stores/policy-records.js';
import { CliError } from './cli-error.js';

/** A recorded policy as the stores read it: what a request of it would carry, without its functions. */
export function policyOfRecord(record: RecordedPolicy): ResolvedPolicy {
  const limit = record.limit ?? Number.NaN;
  return {
    name: record.name,
    id: record.id,
    shape: record.shape,
    ...(record.route === undefined ? {} : { route: record.route }),
    ...(record.anchor === undefined ? {} : { anchor: record.anchor }),
    algorithm: record.algorithm,
    limit,
    windowMs: record.windowMs,
    capacity: record.burst ?? limit,
    ...(record.blockMs === undefined ? {} : { blockMs: record.blockMs }),
    ...(record.quota === undefined ? {} : { quota: record.quota }),
    // Nothing the stores read: the declaration's functions stay in the app.
    source: { name: record.name, algorithm: record.algorithm, limit } as unknown as RateLimitPolicy,
  };
}

/** How the command names a record: as RateLimitService does (`name@Class.method` for scope 'route'). */
export const recordName = (record: RecordedPolicy): string => overrideName(policyOfRecord(record));

/**
 * The recorded policy the operator names, as the instances that recorded it last see it; a name no instance
 * recorded, or a secret that is not theirs, is a CliError that says so.
 */
export async function lookUpPolicy(records: PolicyRecords, name: string): Promise<ResolvedPolicy> {
  const all = await records.list();
  if (all.length === 0) {
    throw new CliError(
      'no policies are recorded in this store under this key prefix: an instance of the app (0.1.0 or later) ' +
        'records them when it starts; check --prefix',
    );
  }
  const named = all.filter((r) => recordName(r) === name).sort((a, b) => b.seenAt - a.seenAt);
  const latest = named[0];
  if (latest === undefined) {
    const names = [...new Set(all.map(recordName))].sort().map((n) => JSON.stringify(n));
    throw new CliError(`no policy "${name}" is recorded; the recorded ones are ${names.join(', ')}`);
  }
  if (latest.check !== records.check) {
    throw new CliError(
      'the identity secret does not match the one the instances use (the check value recorded with their ' +
        "policies differs): set NEST_RATE_LIMIT_IDENTITY_SECRET to the app's identitySecret (unset: the default)",
    );
  }
  return policyOfRecord(latest);
}
