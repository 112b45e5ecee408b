import type { Logger } from '@nestjs/common';

import type { ResolvedPolicy } from '../policy/policy.types.js';
import type { EngineStore } from '../stores/engine-store.js';

/** What the module knows at start that a team should hear of, though it does not stop the start. */
export interface StartFacts {
  /** Every declared policy, once each. */
  readonly declared: Iterable<{ readonly policy: ResolvedPolicy; readonly where: string }>;
  /** The store of a policy (the engine's storeOf). */
  readonly storeOf: (policy: ResolvedPolicy) => EngineStore;
  /** Whether the `postgres` option is set (quotas are then durable). */
  readonly postgres: boolean;
  /** Whether microservice handlers have policies, and the module's lists name client addresses. */
  readonly rpcWithAddressLists: boolean;
}

/** Logs, once at start, what is declared but will not act as a reader of the declaration may expect. */
export function warnAtStart(facts: StartFacts, logger: Pick<Logger, 'warn'>): void {
  const declared = [...facts.declared];
  const quotas = declared.filter(({ policy }) => policy.quota !== undefined);
  if (quotas.length > 0 && !facts.postgres) {
    logger.warn(
      `Quota policies (${names(quotas)}) are kept in the rate-limit store: ` +
        'not billing-grade (the memory store forgets them on restart; Redis keeps only the current period). ' +
        'Set the `postgres` option for durable, exact quota usage.',
    );
  }
  const unleased = declared.filter(({ policy }) => {
    const store = facts.storeOf(policy);
    return policy.lease !== undefined && store.grantsUpTo !== true && store.inProcess !== true;
  });
  if (unleased.length > 0) {
    logger.warn(
      `Policies with a lease (${names(unleased)}) are on a store that grants none (PostgreSQL grants no leases ` +
        'yet): their limits hold exactly, but every request is a store call, as without `lease`.',
    );
  }
  if (facts.rpcWithAddressLists) {
    logger.warn(
      "The module's allow or deny list names client addresses, which microservice messages do not have: " +
        'there, only its functions can match.',
    );
  }
}

/** The policies' names, each once. */
const names = (entries: readonly { policy: ResolvedPolicy; where: string }[]): string =>
  [...new Set(entries.map(({ policy }) => policy.name))].join(', ');
