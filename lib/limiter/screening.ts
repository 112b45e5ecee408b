import type { ExecutionContext } from '@nestjs/common';

import type { PlanEntry, PlannedPolicy } from '../planning/route-planner.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import { isPromise } from './request-items.js';
import { type AccessList, type ListAddress, listAddress, notBoolean } from '../lists/address-list.js';

/** A list function that threw or returned something other than a boolean, as a failure of one policy. */
export interface ListFailure {
  readonly item: PlannedPolicy;
  readonly error: unknown;
}

/** The module's own lists (options `allow` and `deny`), compiled at start. */
export interface ModuleLists {
  readonly allow: AccessList | undefined;
  readonly deny: AccessList | undefined;
}

/** What the lists say about one decision of an invocation. */
export interface Screening {
  /**
   * `deny`: a deny list names the request. `allow`: the module's allow list does, so no policy runs.
   * `policies`: `entries` are the policies left to decide, without those whose own allow list names it.
   */
  readonly outcome: 'deny' | 'allow' | 'policies';
  /** For `deny`: the policy whose deny list matched; undefined for the module's. */
  readonly policy?: string;
  readonly entries: readonly PlanEntry[];
  /** Failures of lists that did not match: their policies' fail modes apply (none when the outcome is `deny`). */
  readonly failures: ListFailure[] | undefined;
  /** Failures that could not change the outcome (the request is denied, or a later entry matched): report only. */
  readonly reported: ListFailure[] | undefined;
}

export interface ScreenInput {
  /** The policies decided at this point of the invocation. */
  readonly entries: readonly PlanEntry[];
  /** The module's lists at the first decision of an invocation; undefined at a later one (they were checked). */
  readonly module: ModuleLists | undefined;
  /** Every policy of the handler: a module list is theirs, so a failure of one applies their fail modes. */
  readonly scope: readonly PlanEntry[];
  /** The module's allow list already let the invocation through: only the policies' deny lists are left. */
  readonly denyOnly: boolean;
  /** The client's full address (the adapter's clientAddress), read only when a list names addresses. */
  readonly address: () => string | undefined;
}

const MODULE_OPTIONS = 'RateLimitModule options';

/**
 * Applies allow and deny lists to one decision point of an invocation, in this order: the module's deny list,
 * the deny lists of the policies, the module's allow list, then each policy's allow list. Within a list,
 * addresses are checked first, then functions in order, each awaited, until one returns true. A function
 * that throws, or returns anything but a boolean, is a failure of the list's policies: the list did not match,
 * and the caller applies their fail modes. Knows no context: the client's address comes from `address`.
 */
export async function screen(ctx: ExecutionContext, input: ScreenInput): Promise<Screening> {
  const lists = new ListChecks(ctx, input);
  const { entries, module } = input;
  // `match === true || (match !== false && (await match))`: a list decided by its addresses awaits nothing.
  let match = lists.names(module?.deny, 'deny', undefined);
  if (match === true || (match !== false && (await match))) return lists.denied(undefined);
  for (const { planned } of entries) {
    match = lists.names(planned.deny, 'deny', planned);
    if (match === true || (match !== false && (await match))) return lists.denied(planned.policy.name);
  }
  match = input.denyOnly || lists.names(module?.allow, 'allow', undefined);
  if (match === true || (match !== false && (await match))) {
    return { outcome: 'allow', entries: [], failures: lists.failures, reported: lists.reported };
  }
  let left = entries;
  for (const entry of entries) {
    match = lists.names(entry.planned.allow, 'allow', entry.planned);
    if (match === true || (match !== false && (await match))) left = left.filter((e) => e !== entry);
  }
  return { outcome: 'policies', entries: left, failures: lists.failures, reported: lists.reported };
}

/**
 * The lists of one screening, checked against one request: the client's address read once (and only when a
 * list names addresses), and the failures of list functions gathered as they happen.
 */
class ListChecks {
  failures: ListFailure[] | undefined;
  reported: ListFailure[] | undefined;
  /** null until read; undefined when the request has no address. */
  private client: ListAddress | undefined | null = null;

  constructor(
    private readonly ctx: ExecutionContext,
    private readonly input: ScreenInput,
  ) {}

  /**
   * Whether `list` (absent: no) names the request: a boolean when its addresses decide or it has no function
   * (so lists of addresses cost no microtask), else a Promise. Failures of its functions go to `failures`,
   * or to `reported` when the list matches anyway. `of` is the list's policy; undefined for the module's.
   */
  names(
    list: AccessList | undefined,
    field: 'allow' | 'deny',
    of: PlannedPolicy | undefined,
  ): boolean | Promise<boolean> {
    if (list === undefined) return false;
    if (list.hasAddresses) {
      const address = this.clientAddress();
      if (address !== undefined && list.hasAddress(address)) return true;
    }
    return list.functions.length === 0 ? false : this.callFunctions(list, field, of);
  }

  /** A denial by a deny list: every failure so far is only reported (the request is refused anyway). */
  denied(policy: string | undefined): Screening {
    const { failures, reported } = this;
    return {
      outcome: 'deny',
      policy,
      entries: [],
      failures: undefined,
      reported: failures === undefined ? reported : [...(reported ?? []), ...failures],
    };
  }

  private clientAddress(): ListAddress | undefined {
    if (this.client === null) {
      const address = this.input.address();
      this.client = address === undefined ? undefined : listAddress(address);
    }
    return this.client;
  }

  private async callFunctions(list: AccessList, field: 'allow' | 'deny', of: PlannedPolicy | undefined) {
    let failed: unknown[] | undefined;
    let matched = false;
    for (const check of list.functions) {
      try {
        let value: unknown = check(this.ctx);
        if (isPromise(value)) value = await value;
        if (value === true) {
          matched = true;
          break;
        }
        if (value !== false) {
          throw new RateLimitPolicyError(notBoolean(value, field), {
            policy: of?.policy.name,
            field,
            where: of?.where ?? MODULE_OPTIONS,
          });
        }
      } catch (error) {
        (failed ??= []).push(error);
      }
    }
    if (failed !== undefined) {
      const owners = of === undefined ? this.input.scope.map((e) => e.planned) : [of];
      const into = matched ? (this.reported ??= []) : (this.failures ??= []);
      for (const error of failed) for (const item of owners) into.push({ item, error });
    }
    return matched;
  }
}
