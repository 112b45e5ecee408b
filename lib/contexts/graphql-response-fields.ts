import { elementAt } from '../util/element-at.js';
import { mostRestrictive } from '../responses/rate-limit-headers.js';
import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';
import type { ShownDecisions } from './context-adapter.js';

/** The arrays a response's record owns, to update in place as more resolvers decide. */
interface OwnDecisions {
  policies: ResolvedPolicy[];
  decisions: RateLimitDecision[];
}

/**
 * What the rate-limit fields of one HTTP response have shown so far, over every resolver that wrote them (the
 * resolvers of an operation, or of a batch of operations, share the response).
 */
interface ResponseFields {
  /** Each policy once, in the order first decided, with its most restrictive decision; undefined before any. */
  shown: ShownDecisions | undefined;
  /**
   * The arrays of `shown` when they are this record's own, to update in place. The first resolver's arrays
   * are kept as they came (an operation of one resolver copies nothing); the second copies them.
   */
  own: OwnDecisions | undefined;
  /** The longest Retry-After written, in seconds; 0 before any. */
  retryAfterS: number;
}

/** Adds `policies` and `decisions` to `own`: a policy already there keeps the more restrictive decision. */
function merge(own: OwnDecisions, policies: readonly ResolvedPolicy[], decisions: readonly RateLimitDecision[]): void {
  decisions.forEach((decision, i) => {
    const policy = elementAt(policies, i, 'the policies of a GraphQL resolver');
    const at = own.decisions.findIndex((d) => d.policy === decision.policy);
    if (at === -1) {
      own.policies.push(policy);
      own.decisions.push(decision);
      return;
    }
    const kept = elementAt(own.decisions, at, 'the decisions shown on a GraphQL response');
    // On a tie the earlier decision stays: of one key, it is the one with the longer reset.
    if (mostRestrictive([kept, decision]) !== kept) {
      own.policies[at] = policy;
      own.decisions[at] = decision;
    }
  });
}

/**
 * Per HTTP response (Fastify reply or Node response), what its rate-limit fields have shown: the resolvers of
 * an operation share one response, so its fields must sum up all of them rather than the last one written.
 */
export class GraphQLResponseFields {
  private readonly responses = new WeakMap<object, ResponseFields>();

  /** Adds one resolver's decisions to `response`'s and returns all of them, so its fields name every policy. */
  accumulate(
    response: object,
    policies: readonly ResolvedPolicy[],
    decisions: readonly RateLimitDecision[],
  ): ShownDecisions {
    const fields = this.responses.get(response);
    if (fields === undefined) {
      const shown = { policies, decisions };
      this.responses.set(response, { shown, own: undefined, retryAfterS: 0 });
      return shown;
    }
    if (fields.shown === undefined) {
      fields.shown = { policies, decisions };
      return fields.shown;
    }
    if (fields.own === undefined) {
      fields.own = { policies: [...fields.shown.policies], decisions: [...fields.shown.decisions] };
      fields.shown = fields.own;
    }
    merge(fields.own, policies, decisions);
    return fields.own;
  }

  /** The value to write: a `Retry-After` shorter than one written before on `response` keeps that one. */
  headerValue(response: object, name: string, value: string): string {
    if (name !== 'Retry-After') return value;
    const seconds = Number(value);
    const fields = this.responses.get(response);
    if (fields === undefined) {
      this.responses.set(response, { shown: undefined, own: undefined, retryAfterS: seconds });
      return value;
    }
    if (seconds <= fields.retryAfterS) return String(fields.retryAfterS);
    fields.retryAfterS = seconds;
    return value;
  }
}
