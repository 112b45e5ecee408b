import { ALGORITHM_CODES, kernelOf } from '../../algorithms/index.js';
import { periodOf } from '../../algorithms/quota/quota.js';
import type { Clock } from '../../util/clock.js';
import type { ResolvedPolicy } from '../../policy/policy.types.js';
import type { StoredIdentities } from '../storage-key.js';
import { BATCH_RUN, BLOCK_FLAG, POLICY_FIELDS, REPLY_WIDTH, UP_TO_SEPARATOR } from '../protocol.js';
import type { StoreCallItem } from '../engine-store.js';

/**
 * One item's arguments: its policy's fields (algorithm code, limit, window, capacity, then a quota's next end
 * and a block's length: see the script's ARGV) and its cost field (the cost, with its up-to for a lease).
 */
interface ItemArgs {
  readonly policy: readonly string[];
  readonly cost: string;
}

/** The arguments of one request: its storage keys and its items', in order. */
export interface RequestArgs {
  readonly keys: readonly string[];
  readonly items: readonly ItemArgs[];
}

/** The arguments of `items` for `op`. A shadow item's algorithm code is negated in consumes, checks and charges. */
export function requestArgs(
  op: string,
  items: readonly StoreCallItem[],
  identities: StoredIdentities,
  clock: Clock,
): RequestArgs {
  const keys: string[] = [];
  const args: ItemArgs[] = [];
  const shadowing = op === 'consume' || op === 'check' || op === 'charge';
  for (const { policy, key, cost = 0, shadow, upTo } of items) {
    keys.push(identities.key(policy, key));
    const costField = upTo !== undefined && upTo > cost ? `${cost}${UP_TO_SEPARATOR}${upTo}` : String(cost);
    args.push({ policy: policyArgs(policy, shadowing && shadow === true, clock), cost: costField });
  }
  return { keys, items: args };
}

/**
 * The fields of a call of one request, after the operation, the time and the slack: each item's policy fields
 * (POLICY_FIELD), its cost, then the rest of its policy's (a quota's next end, a block's length).
 */
export function callFields({ items }: RequestArgs): string[] {
  const fields: string[] = [];
  for (const { policy, cost } of items) {
    fields.push(...policy.slice(0, POLICY_FIELDS), cost, ...policy.slice(POLICY_FIELDS));
  }
  return fields;
}

/**
 * The keys and arguments of one 'batch' call of `requests` (lua/requests.lua): the policies they use, once
 * each, then per request its number of items and each item's policy (its number) and cost; consecutive
 * requests of the same items as one run (BATCH_RUN): under load most requests of a route come as runs.
 */
export function batchArgs(
  requests: readonly RequestArgs[],
  now: string,
  slack: string,
): { keys: string[]; args: string[] } {
  const keys: string[] = [];
  const numbers = new Map<readonly string[], number>();
  const policies: string[] = [];
  const tail: string[] = [];
  const numberOf = (policy: readonly string[]): string => {
    let number = numbers.get(policy);
    if (number === undefined) {
      numbers.set(policy, (number = numbers.size + 1));
      policies.push(...policy);
    }
    return String(number);
  };
  for (let at = 0; at < requests.length;) {
    const request = requests[at] as RequestArgs;
    let end = at + 1;
    while (end < requests.length && sameItems(requests[end] as RequestArgs, request)) end++;
    if (end - at > 1) tail.push(String(BATCH_RUN), String(end - at));
    tail.push(String(request.items.length));
    for (const { policy, cost } of request.items) tail.push(numberOf(policy), cost);
    for (let i = at; i < end; i++) keys.push(...(requests[i] as RequestArgs).keys);
    at = end;
  }
  return { keys, args: ['batch', now, slack, String(numbers.size), ...policies, ...tail] };
}

/** Whether two requests have the same items: their policies (the same fields) and costs, in order. */
function sameItems(a: RequestArgs, b: RequestArgs): boolean {
  if (a.items.length !== b.items.length) return false;
  return a.items.every((item, i) => item.policy === b.items[i]?.policy && item.cost === b.items[i]?.cost);
}

/** Each request's part of the reply of a batch: REPLY_WIDTH integers per item, one request after the other. */
export function splitReply(reply: unknown, requests: readonly RequestArgs[]): unknown[] {
  let at = 0;
  return requests.map(({ keys }) => {
    const part = Array.isArray(reply) ? reply.slice(at, at + REPLY_WIDTH * keys.length) : reply;
    at += REPLY_WIDTH * keys.length;
    return part;
  });
}

/**
 * A policy's fields, as strings, made once per policy (and shadow or not), so that a batch names each policy
 * once. A quota passes its current period instead of a window (Lua knows no time zones), and the end of the
 * next period, where a key may be already when another instance's clock is ahead; its edges come from the
 * app's clock, also when the script reads Redis TIME.
 */
const cached = new WeakMap<ResolvedPolicy, (readonly string[] | undefined)[]>();
function policyArgs(policy: ResolvedPolicy, shadow: boolean, clock: Clock): readonly string[] {
  if (policy.quota === undefined) {
    let byShadow = cached.get(policy);
    if (byShadow === undefined) cached.set(policy, (byShadow = [undefined, undefined]));
    const at = shadow ? 1 : 0;
    return (byShadow[at] ??= fieldsOf(policy, shadow, [String(policy.windowMs), String(policy.capacity)]));
  }
  const { startMs, endMs, nextEndMs } = periodOf(policy, clock.now());
  return fieldsOf(policy, shadow, [String(startMs), String(endMs), String(nextEndMs)]);
}

/** The code (BLOCK_FLAG added for a block, negated for a shadow item), the limit, `middle`, then the block's length. */
function fieldsOf(policy: ResolvedPolicy, shadow: boolean, middle: readonly string[]): readonly string[] {
  const code = ALGORITHM_CODES[kernelOf(policy)] + (policy.blockMs === undefined ? 0 : BLOCK_FLAG);
  const block = policy.blockMs === undefined ? [] : [String(policy.blockMs)];
  return [String(shadow ? -code : code), String(policy.limit), ...middle, ...block];
}
