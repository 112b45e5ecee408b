import { type RateLimitDecision, RateLimitExceededException } from '../../lib/index.js';
import type { DeployInstance } from './deploy-instance.js';

/** The waiters op: `aborted` waiters of fair key A that leave, then `a` of A and `b` of B, arriving in `order`. */
export interface WaitersOp {
  readonly key: string;
  readonly aborted: number;
  readonly a: number;
  readonly b: number;
  /** Sort keys: the arrival order of A's and B's waiters, and the order in which the aborted ones leave. */
  readonly order: readonly number[];
}

/** What a waiter got: admitted (its decision), or refused (the denial it was refused with). */
export interface WaiterOutcome {
  readonly fairKey: 'A' | 'B';
  readonly admitted: boolean;
  readonly decision: RateLimitDecision;
}

/** `items` in the order of their sort keys `keys[i % keys.length]` (ties keep their order). */
function shuffled<T>(items: readonly T[], keys: readonly number[]): T[] {
  const keyed = items.map((item, i) => ({ item, key: keys[i % keys.length] ?? 0, i }));
  keyed.sort((x, y) => x.key - y.key || x.i - y.i);
  return keyed.map(({ item }) => item);
}

/**
 * Waiters of RateLimitService.acquire on one key of `instance`, each for 1 unit, with `maxWaitMs: 0` (each asks
 * the store once, in its turn, and is admitted or refused; no timer runs). The aborted ones arrive and leave
 * first; then the others arrive, all before the first of them is served. Resolves with their outcomes in the
 * order they were served or refused.
 */
export async function playWaiters(instance: DeployInstance, op: WaitersOp): Promise<WaiterOutcome[]> {
  const { service, policy } = instance;
  const outcomes: WaiterOutcome[] = [];
  const wait = (fairKey: 'A' | 'B', signal?: AbortSignal) =>
    service.acquire(policy.source, op.key, { cost: 1, maxWaitMs: 0, fairKey, signal });
  const leaving = Array.from({ length: op.aborted }, () => new AbortController());
  const left = leaving.map((controller) =>
    wait('A', controller.signal).then(
      () => undefined, // served before it left: its units are given back (not counted)
      () => undefined,
    ),
  );
  for (const controller of shuffled(leaving, op.order.slice(5))) controller.abort(new Error('the waiter left'));
  const arriving = shuffled([...Array<'A'>(op.a).fill('A'), ...Array<'B'>(op.b).fill('B')], op.order);
  const served = arriving.map((fairKey) =>
    wait(fairKey).then(
      (decision) => void outcomes.push({ fairKey, admitted: true, decision }),
      (error: unknown) => {
        if (!(error instanceof RateLimitExceededException)) throw error;
        outcomes.push({ fairKey, admitted: false, decision: error.decision });
      },
    ),
  );
  await Promise.all([...left, ...served]);
  return outcomes;
}

/**
 * Where the waiters that stayed were not served in turn: A and B, each at weight 1 and 1 unit a waiter, take
 * turns while both have waiters, so among the first 2 × min(a, b) turns neither is admitted twice ahead of the
 * other. (Once the key's budget is spent every later waiter is refused, whatever its turn: only admissions count.)
 */
export function unfairTurns(outcomes: readonly WaiterOutcome[], op: Omit<WaitersOp, 'key'>): string | undefined {
  const turns = outcomes.slice(0, 2 * Math.min(op.a, op.b));
  let lead = 0;
  for (const { fairKey, admitted } of turns) {
    if (!admitted) break;
    lead += fairKey === 'A' ? 1 : -1;
    if (Math.abs(lead) > 1) {
      const served = outcomes.map((o) => (o.admitted ? o.fairKey : o.fairKey.toLowerCase())).join('');
      return `after ${op.aborted} waiters of A left, the others were admitted (refused in lower case) ${served}`;
    }
  }
  return undefined;
}
