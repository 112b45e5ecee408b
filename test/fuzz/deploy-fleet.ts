import { jest } from '@jest/globals';

import type { RateLimitDecision, RateLimitReservation, ResolvedPolicy } from '../../lib/index.js';
import { maxWaitMs } from '../../lib/policy/max-wait.js';
import { DeployInstance } from './deploy-instance.js';
import { type Asker, DeployLedger, describe } from './deploy-ledger.js';
import { type Actual, type Cost, KEYS, type Op, type Path, type TimedOp } from './deploy-ops.js';
import { playWaiters, unfairTurns, type WaitersOp } from './fair-waiters.js';
import type { FuzzRun } from './fuzz-stores.js';

/** A reservation still open, and the admission it counts (at its estimate until settled). */
interface Open {
  readonly instance: DeployInstance;
  readonly key: string;
  readonly reservation: RateLimitReservation;
  readonly estimate: number;
  readonly counted: { cost: number };
}

function costOf(cost: Cost, policy: ResolvedPolicy): number {
  if (typeof cost === 'number') return cost;
  return cost === 'capacity' ? policy.capacity : policy.capacity + 1;
}

function actualOf(actual: Actual, estimate: number): number {
  switch (actual) {
    case 'half':
      return Math.floor(estimate / 2);
    case 'estimate':
      return estimate;
    case 'estimate + 1':
      return estimate + 1;
    case 'double':
      return 2 * estimate;
    case 'huge':
      // a settle function that counts bytes instead of tokens
      return Number.MAX_SAFE_INTEGER;
    default:
      return 0;
  }
}

/**
 * Two instances of the module on one store, driven op by op: the run's time (every instance's clock is it plus
 * the instance's offset) and the real time the module measures with performance.now() (the cache of denials'
 * trust, acquire's patience) move only between ops, by each op's `dt`. Every answer goes through the ledger.
 */
export class DeployFleet {
  private baseMs: number;
  private realMs = performance.now();
  private readonly realClock = jest.spyOn(performance, 'now').mockImplementation(() => this.realMs);
  readonly ledger: DeployLedger;
  readonly instances: DeployInstance[];
  private open: Open[] = [];
  /** Waiters ops so far: each has a key of its own. */
  private waited = 0;

  constructor(
    run: FuzzRun,
    private readonly versions: readonly ResolvedPolicy[],
    private readonly skewMs: number,
    startMs: number,
    private readonly operator = run.operator?.bind(run),
  ) {
    this.baseMs = startMs;
    this.ledger = new DeployLedger(versions, skewMs, () => this.realMs);
    const onDecision = (instance: DeployInstance, event: Parameters<DeployLedger['event']>[1]) =>
      this.ledger.event({ instance: instance.index, version: instance.version, policy: instance.policy }, event);
    this.instances = [0, 1].map((i) => new DeployInstance(i, run, versions, startMs, onDecision));
  }

  /** Both instances on the first version, the second one's clock ahead by the whole skew (until a clock op). */
  async start(): Promise<void> {
    const ahead = this.on(1);
    ahead.offsetMs = this.skewMs;
    ahead.clock.set(this.baseMs + ahead.offsetMs);
    for (const instance of this.instances) await instance.start(0);
  }

  async close(): Promise<void> {
    try {
      for (const instance of this.instances) await instance.stop();
    } finally {
      this.realClock.mockRestore();
    }
  }

  /** Lets `dt` pass, plays the op, and throws what the ledger found wrong with its answers. */
  async play(op: TimedOp): Promise<void> {
    this.baseMs += op.dt;
    this.realMs += op.dt;
    for (const instance of this.instances) {
      instance.clock.set(this.baseMs + instance.offsetMs);
      instance.feedConfirms(this.realMs);
    }
    await this.playOp(op);
    this.ledger.assertNoProblem();
  }

  private async playOp(op: Op): Promise<void> {
    switch (op.kind) {
      case 'request':
        return this.request(this.on(op.instance), op.key, op.cost, op.via);
      case 'burst': {
        const instance = this.on(op.instance);
        const count = op.count === 'capacity' ? instance.policy.capacity : op.count;
        for (let i = 0; i < count; i++) await this.request(instance, op.key, 1);
        return;
      }
      case 'peek': {
        const instance = this.on(op.instance);
        this.check(instance, 0, 'peek', await instance.service.peek(instance.policy.source, op.key));
        return;
      }
      case 'idle':
        return this.idle(this.on(op.instance), op.key);
      case 'reserve':
        return this.reserve(this.on(op.instance), op.key, op.cost);
      case 'settle':
        return this.settle(op.pick, op.actual, op.busy);
      case 'reset':
        await this.on(op.instance).service.reset(this.on(op.instance).policy.source, op.key);
        this.ledger.reset();
        this.forget((open) => open.key === op.key);
        return;
      case 'operator':
        if (this.operator === undefined) return;
        await this.operator(op.action, op.pick);
        this.ledger.operator();
        this.forget(() => true);
        return;
      case 'deploy':
        return this.deploy(this.on(op.instance), op.version % this.versions.length);
      case 'clock':
        this.on(op.instance).offsetMs = op.offsetMs;
        this.on(op.instance).clock.set(this.baseMs + op.offsetMs);
        return;
      case 'waiters':
        return this.waiters(this.on(op.instance), op);
    }
  }

  private on(index: number): DeployInstance {
    return this.instances[index] as DeployInstance;
  }

  private check(instance: DeployInstance, cost: number, what: string, decision: RateLimitDecision): void {
    const asker: Asker = { instance: instance.index, version: instance.version, policy: instance.policy, cost, what };
    this.ledger.decision(asker, decision);
  }

  private async request(instance: DeployInstance, key: string, asked: Cost, via: Path = 'guard'): Promise<void> {
    const cost = costOf(asked, instance.policy);
    let decision: RateLimitDecision;
    if (via === 'service') {
      decision = await instance.service.consume(instance.policy.source, key, { cost });
    } else {
      const guarded = await instance.guardDecides(key, cost);
      decision = guarded.decision;
      const { index, version, policy } = instance;
      this.ledger.event({ instance: index, version, policy }, { ...decision, key, cost, source: guarded.source });
    }
    this.check(instance, cost, `a request of key ${key} (${via})`, decision);
    if (decision.allowed) this.ledger.admit(instance.version, key, instance.clock.now(), cost);
  }

  /**
   * Nobody locked out: once the longest wait of every version (and the skew) has passed, every key has a unit
   * left on every instance, and a request of one is admitted, whatever the key owed, whatever state a version of
   * another shape or a clock ahead left.
   */
  private async idle(instance: DeployInstance, key: string): Promise<void> {
    const waitedMs = this.longestWaitMs();
    await this.play({ kind: 'clock', instance: instance.index, offsetMs: instance.offsetMs, dt: waitedMs });
    const locked = (at: DeployInstance, k: string, d: RateLimitDecision) =>
      this.ledger.problem(
        `key ${k} is locked out on instance ${at.index} (version ${at.version}: ${describe(at.policy)}) after ` +
          `the longest wait of every version and the skew (${waitedMs} ms): ${JSON.stringify(d)}`,
      );
    for (const at of this.instances) {
      for (const k of KEYS) {
        const peeked = await at.service.peek(at.policy.source, k);
        this.check(at, 0, `a peek of key ${k} after the longest wait`, peeked);
        if (peeked.remaining < 1 || peeked.blocked === true) locked(at, k, peeked);
      }
    }
    const decision = await instance.service.consume(instance.policy.source, key);
    this.check(instance, 1, `a request of key ${key} after the longest wait`, decision);
    if (decision.allowed) this.ledger.admit(instance.version, key, instance.clock.now(), 1);
    else locked(instance, key, decision);
  }

  /** The longest wait any version may ask, and the skew: after it, every key is free again. */
  private longestWaitMs(): number {
    return Math.max(...this.versions.map((v) => maxWaitMs(v))) + this.skewMs + 1;
  }

  private async reserve(instance: DeployInstance, key: string, asked: Cost): Promise<void> {
    const estimate = costOf(asked, instance.policy);
    const reservation = await instance.service.reserve([{ policy: instance.policy.source, key, cost: estimate }]);
    this.check(instance, estimate, `a reservation of key ${key}`, reservation.decisions[0] as RateLimitDecision);
    if (!reservation.allowed) return;
    const counted = this.ledger.admit(instance.version, key, instance.clock.now(), estimate);
    this.open.push({ instance, key, reservation, estimate, counted });
  }

  /**
   * Settles an open reservation (`busy`: after the other instance took what it could of the key meanwhile): it
   * counts at its actual cost where that is less than its estimate. Then the key's next requests take what the
   * settlement gave back (too much, where others took what had refilled since the charge).
   */
  private async settle(pick: number, actualCost: Actual, busy: boolean): Promise<void> {
    if (this.open.length === 0) return;
    const [open] = this.open.splice(pick % this.open.length, 1) as [Open];
    const { instance, estimate, counted } = open;
    if (busy) {
      const other = this.on(1 - instance.index);
      for (let i = 0; i < other.policy.capacity; i++) await this.request(other, open.key, 1);
    }
    const actual = actualOf(actualCost, estimate);
    const [after] = await open.reservation.settle(actual);
    // the wait of the overrun charged (a cost that may never fit), or of a unit after a refund
    this.check(
      instance,
      Math.max(actual - estimate, 1),
      `a settlement at ${actual} of ${estimate}`,
      after as RateLimitDecision,
    );
    counted.cost = Math.min(actual, estimate);
    // what the settlement gave back is taken at once, as a busy key's next requests would
    for (let i = 0; i < instance.policy.capacity; i++) await this.request(instance, open.key, 1);
  }

  /** A rolling deploy: one instance stops and starts again on another version, beside the other. */
  private async deploy(instance: DeployInstance, version: number): Promise<void> {
    await instance.stop();
    // its open reservations stay charged at their estimates, as the module leaves them when it stops
    this.forget((open) => open.instance === instance);
    await instance.start(version);
  }

  /**
   * Leaves reservations open for good (they stay charged at their estimates): those of an instance stopped, and
   * those whose key was reset or flushed since they were charged. A settlement cannot know that its charge was
   * removed meanwhile: it would give back units the reset had already freed (over-admission, once per reset).
   */
  private forget(which: (open: Open) => boolean): void {
    this.open = this.open.filter((open) => !which(open));
  }

  /** Waiters on a key of their own, whose budget (its capacity) the ones served first take. */
  private async waiters(instance: DeployInstance, op: Omit<WaitersOp, 'key'>): Promise<void> {
    const key = `waiters-${++this.waited}`;
    const outcomes = await playWaiters(instance, { ...op, key });
    for (const { fairKey, admitted, decision } of outcomes) {
      this.check(instance, 1, `a waiter of ${fairKey} for key ${key}`, decision);
      if (admitted) this.ledger.admit(instance.version, key, instance.clock.now(), 1);
    }
    const unfair = unfairTurns(outcomes, op);
    if (unfair !== undefined) this.ledger.problem(`instance ${instance.index}, key ${key}: ${unfair}`);
  }

  /** The end of a run: after a quiet time nobody is locked out; the admissions, each version within its bound. */
  async finish(): Promise<void> {
    await this.play({ kind: 'idle', instance: 0, key: 'a', dt: 0 });
    const found = this.ledger.admissionViolations();
    if (found.length > 0) throw new Error(`admitted beyond the bound:\n${found.join('\n')}`);
  }
}
