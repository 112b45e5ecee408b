import type { ExecutionContext } from '@nestjs/common';
import { isIP } from 'node:net';

import { elementAt } from '../util/element-at.js';

/** A function of an allow or deny list: true when the request is on the list (may be async). */
export type RateLimitListFunction = (ctx: ExecutionContext) => boolean | Promise<boolean>;

/**
 * A client address as lists compare it: an IPv4 address as a number (0 to 2^32 − 1), an IPv6 address as a
 * 128-bit bigint. IPv4-mapped IPv6 (`::ffff:10.0.0.1`) is the IPv4 number, so it matches IPv4 ranges.
 */
export type ListAddress = number | bigint;

/** `::ffff:0:0/96`, the IPv4-mapped block of IPv6, as 128-bit bounds. */
const MAPPED_FIRST = 0xffff_0000_0000n;
const MAPPED_LAST = 0xffff_ffff_ffffn;

/** `bounds` holds two per range: bisection never reads past them. */
const BOUNDS = 'the bounds of an address list';

/**
 * Sorted, disjoint ranges `[first, last]`, flattened (`[f0, l0, f1, l1, ...]`), searched by bisection: a list
 * of any length costs a request a handful of comparisons.
 */
class Ranges<T extends number | bigint> {
  private constructor(private readonly bounds: readonly T[]) {}

  static of<T extends number | bigint>(ranges: [T, T][]): Ranges<T> | undefined {
    if (ranges.length === 0) return undefined;
    ranges.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const bounds: T[] = [];
    for (const [first, last] of ranges) {
      const previousLast = bounds.at(-1);
      // Overlapping the previous range (sorted by first address): extend it.
      if (previousLast !== undefined && first <= previousLast) {
        if (last > previousLast) bounds[bounds.length - 1] = last;
      } else {
        bounds.push(first, last);
      }
    }
    return new Ranges(bounds);
  }

  has(value: T): boolean {
    const { bounds } = this;
    // The last range whose first address is <= value.
    let low = 0;
    let high = bounds.length / 2 - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      if (elementAt(bounds, 2 * mid, BOUNDS) <= value) low = mid + 1;
      else high = mid - 1;
    }
    return high >= 0 && value <= elementAt(bounds, 2 * high + 1, BOUNDS);
  }
}

/**
 * One allow or deny list, compiled at start: its addresses and CIDR ranges as numeric ranges per family, and
 * its functions in the order given.
 */
export class AccessList {
  private constructor(
    private readonly v4: Ranges<number> | undefined,
    private readonly v6: Ranges<bigint> | undefined,
    readonly functions: readonly RateLimitListFunction[],
  ) {}

  /** Whether the list names any address or range (else only functions, which need no address). */
  get hasAddresses(): boolean {
    return this.v4 !== undefined || this.v6 !== undefined;
  }

  /** Whether `address` is one of the list's addresses or in one of its ranges. */
  hasAddress(address: ListAddress): boolean {
    return typeof address === 'number' ? (this.v4?.has(address) ?? false) : (this.v6?.has(address) ?? false);
  }

  /** @internal */
  static build(v4: [number, number][], v6: [bigint, bigint][], functions: RateLimitListFunction[]): AccessList {
    return new AccessList(Ranges.of(v4), Ranges.of(v6), Object.freeze(functions));
  }
}

const describe = (value: unknown): string =>
  typeof value === 'string' ? JSON.stringify(value) : typeof value === 'function' ? 'a function' : String(value);

/**
 * The eight 16-bit groups of an IPv6 address that `isIP` accepted (no zone): `::` expanded, a trailing
 * dotted quad read as two groups. One pass over the characters, because a request pays for it: ipaddr.js's
 * general parser takes several times longer.
 */
export function v6Groups(address: string): V6Groups {
  const groups: number[] = [];
  let gap = -1;
  let group = 0;
  let digits = 0;
  for (let i = 0; i < address.length; i++) {
    const c = address.charCodeAt(i);
    if (c === 58 /* : */) {
      if (digits > 0) groups.push(group);
      if (address.charCodeAt(i + 1) === 58) {
        gap = groups.length;
        i++;
      }
      group = 0;
      digits = 0;
    } else if (c === 46 /* . */) {
      // A dotted quad ends the address: from the group it started in.
      const v4 = v4Value(address.slice(address.lastIndexOf(':', i) + 1));
      groups.push(Math.floor(v4 / 65536), v4 % 65536);
      digits = 0;
      break;
    } else {
      // 0-9, A-F, a-f
      group = group * 16 + (c <= 57 ? c - 48 : (c | 32) - 87);
      digits++;
    }
  }
  if (digits > 0) groups.push(group);
  if (gap !== -1) groups.splice(gap, 0, ...new Array<number>(8 - groups.length).fill(0));
  if (!isV6Groups(groups)) throw new Error(`nest-rate-limit: ${address} does not have eight IPv6 groups`);
  return groups;
}

/** The eight 16-bit groups of an IPv6 address. */
type V6Groups = [number, number, number, number, number, number, number, number];

const isV6Groups = (groups: number[]): groups is V6Groups => groups.length === 8;

/** The 128-bit value of eight 16-bit groups. */
function v6Value(groups: Readonly<V6Groups>): bigint {
  // Two 64-bit halves from exact 48-bit + 16-bit sums: four bigint steps instead of eight.
  const high = BigInt(groups[0] * 2 ** 32 + groups[1] * 65536 + groups[2]) * 65536n + BigInt(groups[3]);
  const low = BigInt(groups[4] * 2 ** 32 + groups[5] * 65536 + groups[6]) * 65536n + BigInt(groups[7]);
  return (high << 64n) | low;
}

/** A dotted-quad IPv4 address (already validated) as a number. */
function v4Value(address: string): number {
  let value = 0;
  let octet = 0;
  for (let i = 0; i < address.length; i++) {
    const c = address.charCodeAt(i);
    if (c === 46) {
      value = value * 256 + octet;
      octet = 0;
    } else {
      octet = octet * 10 + (c - 48);
    }
  }
  return value * 256 + octet;
}

/**
 * Adds the range of one address or CIDR entry; returns what is wrong with it, or undefined. Host bits under
 * the prefix are ignored (`10.0.0.1/8` is `10.0.0.0/8`), as `proxy-addr` and so `trustProxy` read them.
 */
function addRange(entry: string, v4: [number, number][], v6: [bigint, bigint][]): string | undefined {
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  if (address.includes('%')) {
    return `zone ids are not part of a client address; write it without "${address.slice(address.indexOf('%'))}"`;
  }
  const family = isIP(address);
  if (family === 0) {
    return "is not an IP address or CIDR range (such as '203.0.113.7', '10.0.0.0/8', '2001:db8::/32')";
  }
  const maxBits = family === 4 ? 32 : 128;
  let bits = maxBits;
  if (slash !== -1) {
    const prefix = entry.slice(slash + 1);
    if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > maxBits) {
      return `has a bad prefix length: an IPv${family} CIDR range takes /0 to /${maxBits}`;
    }
    bits = Number(prefix);
  }
  if (family === 4) {
    const size = 2 ** (32 - bits);
    const first = Math.floor(v4Value(address) / size) * size;
    v4.push([first, first + size - 1]);
    return undefined;
  }
  const size = 1n << BigInt(128 - bits);
  const value = v6Value(v6Groups(address));
  const first = value - (value % size);
  const last = first + size - 1n;
  v6.push([first, last]);
  // The part of the range inside ::ffff:0:0/96 is IPv4: clients there are read as IPv4 addresses.
  if (first <= MAPPED_LAST && last >= MAPPED_FIRST) {
    const low = first > MAPPED_FIRST ? first : MAPPED_FIRST;
    const high = last < MAPPED_LAST ? last : MAPPED_LAST;
    v4.push([Number(low - MAPPED_FIRST), Number(high - MAPPED_FIRST)]);
  }
  return undefined;
}

const compiled = new WeakMap<object, AccessList | undefined>();

/**
 * Compiles an `allow` or `deny` list (of the module's options or of a policy) once: addresses and CIDR ranges
 * (IPv4, IPv6, IPv4-mapped) into sorted numeric ranges, functions kept as they are. An absent or empty list is
 * undefined (nothing to check). What is wrong goes to `fail`, naming the entry.
 * @example compileList(['10.0.0.0/8', '2001:db8::/32', (ctx) => isInternal(ctx)], (problem) => { throw new Error(problem) })
 */
export function compileList(entries: unknown, fail: (problem: string) => never): AccessList | undefined {
  if (entries === undefined) return undefined;
  if (!Array.isArray(entries)) {
    return fail(
      `must be an array of client addresses, CIDR ranges (IPv4 or IPv6) or functions (ctx) => boolean, got ${describe(entries)}`,
    );
  }
  if (compiled.has(entries)) return compiled.get(entries);
  const v4: [number, number][] = [];
  const v6: [bigint, bigint][] = [];
  const functions: RateLimitListFunction[] = [];
  for (let i = 0; i < entries.length; i++) {
    const entry: unknown = entries[i];
    if (typeof entry === 'function') {
      functions.push(entry as RateLimitListFunction);
      continue;
    }
    if (typeof entry !== 'string') {
      return fail(`entry ${i} must be an address, a CIDR range or a function, got ${describe(entry)}`);
    }
    const problem = addRange(entry, v4, v6);
    if (problem !== undefined) fail(`entry ${i}, ${JSON.stringify(entry)}, ${problem}`);
  }
  const list = entries.length === 0 ? undefined : AccessList.build(v4, v6, functions);
  compiled.set(entries, list);
  return list;
}

/**
 * A client's address as lists compare it. Only for what `clientAddress()` of keys/client-ip.ts returns (an
 * address `isIP` accepted, without port, brackets or zone): it is not validated again.
 */
export function listAddress(address: string): ListAddress {
  if (!address.includes(':')) return v4Value(address);
  const groups = v6Groups(address);
  const mapped = groups[5] === 0xffff && groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0;
  if (mapped && groups[4] === 0) return groups[6] * 65536 + groups[7];
  return v6Value(groups);
}

/** What a list function returned, when it is not a boolean: the message of the error it becomes. */
export const notBoolean = (value: unknown, field: 'allow' | 'deny'): string =>
  `a function of the ${field} list returned ${value === null ? 'null' : typeof value}; it must return true or false (or a Promise of one)`;
