import { overrideName, storedOverride } from '../engine/overrides/override-book.js';
import { checkOverrideChange } from '../policy/override.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { ResolvedPolicy } from '../policy/policy.types.js';
import { parseWindow } from '../policy/window.js';
import type { StoredOverride } from '../stores/overrides.js';
import { systemClock } from '../util/clock.js';
import { CliError } from './cli-error.js';
import type { CliStore } from './connection.js';
import { lookUpPolicy, recordName } from './policy-lookup.js';

/** What a command prints: lines for a reader, or a value for `--json`. */
export interface CommandResult {
  readonly text: string;
  readonly json: unknown;
}

/** The options a command reads beyond its positionals. */
export interface CommandOptions {
  readonly for?: string;
  readonly limit?: string;
  readonly burst?: string;
  readonly ttl?: string;
  readonly reason?: string;
  readonly shadow?: boolean;
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/** A whole number the operator typed, or a CliError naming the option. */
function integerOption(value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new CliError(`--${option} must be a whole number, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** A policy's error (a bad limit, a burst it lacks) as the command line names it. */
function asCliError(error: unknown): never {
  if (error instanceof RateLimitPolicyError && error.field !== undefined) {
    throw new CliError(`--${error.field}: ${error.message.replace(/^.*?: /, '')}`);
  }
  throw error;
}

/** An override as the command shows it. */
function overrideJson(o: StoredOverride) {
  return {
    policy: o.policy,
    identity: o.identity,
    limit: o.limit ?? null,
    burst: o.burst ?? null,
    until: iso(o.until),
    reason: o.reason ?? null,
    shadow: o.shadow,
    setAt: iso(o.setAt),
  };
}

function overrideLine(o: StoredOverride): string {
  const values = [o.limit === undefined ? '' : `limit ${o.limit}`, o.burst === undefined ? '' : `burst ${o.burst}`]
    .filter((v) => v !== '')
    .join(', ');
  const until = o.until === undefined ? 'until removed' : `until ${iso(o.until)}`;
  return `${o.policy}  ${o.identity}  ${values}${o.shadow ? ' (dry run)' : ''}  ${until}  set ${iso(o.setAt)}${
    o.reason === undefined ? '' : `  ${JSON.stringify(o.reason)}`
  }`;
}

/** The commands, each on a connected store; the feed of changes tells every instance what changed. */
export class Commands {
  constructor(
    private readonly connection: CliStore,
    private readonly now: () => number = () => systemClock.now(),
  ) {}

  private get store() {
    return this.connection.store;
  }

  async policies(): Promise<CommandResult> {
    const records = (await this.store.policies.list()).sort((a, b) => recordName(a).localeCompare(recordName(b)));
    const check = this.store.policies.check;
    const json = records.map((r) => ({
      ...r,
      name: recordName(r),
      seenAt: iso(r.seenAt),
      secretMatches: r.check === check,
    }));
    const lines = records.map((r) => {
      const limits = `limit ${r.limit ?? 'per request'}${r.burst === null ? '' : `, burst ${r.burst}`}`;
      const secret = r.check === check ? '' : '  (another identity secret)';
      return `${recordName(r)}  ${r.algorithm}  window ${r.windowMs} ms  ${limits}  shape ${r.shape}  recorded ${iso(r.seenAt)}${secret}`;
    });
    return { text: lines.length === 0 ? 'no policies recorded under this key prefix' : lines.join('\n'), json };
  }

  async inspect(name: string, identity: string): Promise<CommandResult> {
    const declared = await lookUpPolicy(this.store.policies, name);
    const override = await this.overrideOf(declared, identity);
    const limit = override?.shadow === false ? (override.limit ?? declared.limit) : declared.limit;
    if (Number.isNaN(limit)) {
      throw new CliError(
        `policy "${name}" has a limit that depends on the request: inspect reads it through an override only`,
      );
    }
    const policy = {
      ...declared,
      limit,
      capacity: override?.burst ?? (Number.isNaN(declared.capacity) ? limit : declared.capacity),
    };
    const [decision] = await this.store.peek([{ policy, key: identity }]);
    if (decision === undefined) throw new CliError('the store answered no decision');
    const nowMs = this.now();
    const blockedUntil = decision.blocked === true ? nowMs + decision.retryAfterMs : undefined;
    const json = {
      policy: name,
      identity: this.store.overrides.identityOf(declared.shape, identity),
      shape: declared.shape,
      limit,
      remaining: decision.remaining,
      resetAt: iso(nowMs + decision.resetMs),
      blockedUntil: iso(blockedUntil),
      override: override === undefined ? null : overrideJson(override),
    };
    const text = [
      `${name} for ${json.identity} (shape ${declared.shape})`,
      `remaining ${decision.remaining} of ${limit}, resets at ${json.resetAt}`,
      blockedUntil === undefined ? 'not blocked' : `blocked until ${json.blockedUntil}`,
      override === undefined ? 'no override' : `override: ${overrideLine(override)}`,
    ].join('\n');
    return { text, json };
  }

  async reset(name: string, identity: string): Promise<CommandResult> {
    const policy = await lookUpPolicy(this.store.policies, name);
    await this.store.reset([{ policy, key: identity }]);
    await this.announce(policy, identity);
    return { text: `reset ${name} for ${this.hashOf(policy, identity)}`, json: { reset: true } };
  }

  async block(name: string, identity: string, options: CommandOptions): Promise<CommandResult> {
    const policy = await lookUpPolicy(this.store.policies, name);
    const durationMs = parseWindow(options.for);
    if (durationMs === undefined)
      throw new CliError(`block needs --for <duration> such as 15m, got ${JSON.stringify(options.for)}`);
    if (this.store.block === undefined) throw new CliError('this store cannot block');
    await this.store.block([{ policy, key: identity }], durationMs);
    await this.announce(policy, identity);
    const until = iso(this.now() + durationMs);
    return {
      text: `blocked ${name} for ${this.hashOf(policy, identity)} until ${until}`,
      json: { blockedUntil: until },
    };
  }

  async unblock(name: string, identity: string): Promise<CommandResult> {
    const policy = await lookUpPolicy(this.store.policies, name);
    if (this.store.unblock === undefined) throw new CliError('this store cannot unblock');
    await this.store.unblock([{ policy, key: identity }]);
    await this.announce(policy, identity);
    return { text: `unblocked ${name} for ${this.hashOf(policy, identity)}`, json: { unblocked: true } };
  }

  async overrideSet(name: string, identity: string, options: CommandOptions): Promise<CommandResult> {
    const policy = await lookUpPolicy(this.store.policies, name);
    const change = {
      ...(options.limit === undefined ? {} : { limit: integerOption(options.limit, 'limit') }),
      ...(options.burst === undefined ? {} : { burst: integerOption(options.burst, 'burst') }),
      ...(options.ttl === undefined ? {} : { ttl: options.ttl }),
      ...(options.reason === undefined ? {} : { reason: options.reason }),
      ...(options.shadow === true ? { shadow: true } : {}),
    };
    let checked;
    try {
      checked = checkOverrideChange(policy, change);
    } catch (error) {
      asCliError(error);
    }
    const stored = storedOverride(policy, this.hashOf(policy, identity), checked, this.now());
    await this.store.overrides.put(stored);
    await this.store.changes?.announce('overrides');
    return { text: `override set: ${overrideLine(stored)}`, json: overrideJson(stored) };
  }

  async overrideRemove(name: string, identity: string): Promise<CommandResult> {
    const policy = await lookUpPolicy(this.store.policies, name);
    const removed = await this.store.overrides.remove(overrideName(policy), this.hashOf(policy, identity));
    await this.store.changes?.announce('overrides');
    return { text: removed ? 'override removed' : 'no override was set', json: { removed } };
  }

  async overrideList(name: string | undefined): Promise<CommandResult> {
    const nowMs = this.now();
    const list = (await this.store.overrides.list())
      .filter((o) => (name === undefined || o.policy === name) && (o.until === undefined || o.until > nowMs))
      .sort((a, b) => a.policy.localeCompare(b.policy) || a.identity.localeCompare(b.identity));
    return {
      text: list.length === 0 ? 'no overrides in force' : list.map(overrideLine).join('\n'),
      json: list.map(overrideJson),
    };
  }

  /** The identity as the store keeps it: the instances' logs and `overrides()` name it so. */
  private hashOf(policy: ResolvedPolicy, identity: string): string {
    return this.store.overrides.identityOf(policy.shape, identity);
  }

  /** The override in force for `identity` under `policy`, if any. */
  private async overrideOf(policy: ResolvedPolicy, identity: string): Promise<StoredOverride | undefined> {
    const hash = this.hashOf(policy, identity);
    const nowMs = this.now();
    return (await this.store.overrides.list()).find(
      (o) => o.policy === overrideName(policy) && o.identity === hash && (o.until === undefined || o.until > nowMs),
    );
  }

  /** Tells every instance that the key changed, so that none keeps denying it from its cache of denials. */
  private async announce(policy: ResolvedPolicy, identity: string): Promise<void> {
    const changes = this.store.changes;
    if (changes === undefined) return;
    await changes.announce([{ policy: policy.id, key: changes.keyOf?.(policy, identity) ?? identity }]);
  }
}
