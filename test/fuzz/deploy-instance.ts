import { Test, type TestingModule } from '@nestjs/testing';

import {
  RATE_LIMIT_CLOCK,
  type RateLimitDecision,
  RateLimitModule,
  RateLimitService,
  type ResolvedPolicy,
} from '../../lib/index.js';
import type { RateLimitDecisionSource } from '../../lib/policy/policy.types.js';
import type { RateLimitDecisionEvent } from '../../lib/limiter/decision-events.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { FakeClock } from '../../lib/testing/index.js';
import { CapturingLogger } from '../support/log-lines.js';
import type { FuzzRun } from './fuzz-stores.js';

/** The module's `timeout`: long, since the fuzzer's store calls share 2 cores with other tests. */
const STORE_TIMEOUT_MS = 10_000;

/**
 * One instance of the module (an app's RateLimitModule, driven through RateLimitService) on its own clock: the
 * run's time plus its offset. A deploy stops it and starts it again with another version of the policy.
 */
export class DeployInstance {
  readonly clock: FakeClock;
  offsetMs = 0;
  version = 0;
  readonly logger = new CapturingLogger();
  private running: { moduleRef: TestingModule; service: RateLimitService; close(): Promise<void> } | undefined;

  constructor(
    readonly index: number,
    private readonly run: FuzzRun,
    readonly versions: readonly ResolvedPolicy[],
    startMs: number,
    private readonly onDecision: (instance: DeployInstance, event: RateLimitDecisionEvent) => void,
  ) {
    this.clock = new FakeClock(startMs);
  }

  /** The version of the policy this instance runs. */
  get policy(): ResolvedPolicy {
    return this.versions[this.version] as ResolvedPolicy;
  }

  get service(): RateLimitService {
    if (this.running === undefined) throw new Error(`instance ${this.index} is not running`);
    return this.running.service;
  }

  /** Starts the module on the run's store, deciding `version` of the policy. */
  async start(version: number): Promise<void> {
    this.version = version;
    const { store, close } = this.run.storeFor(this.clock);
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          store,
          onDecision: (event) => this.onDecision(this, event),
          // a store call's real time on a busy machine of 2 cores is not what the fuzzer checks
          timeout: STORE_TIMEOUT_MS,
        }),
      ],
    })
      .overrideProvider(RATE_LIMIT_CLOCK)
      .useValue(this.clock)
      .setLogger(this.logger)
      .compile();
    await moduleRef.init();
    this.running = { moduleRef, service: moduleRef.get(RateLimitService), close };
  }

  /**
   * A request's decision as the guard's path makes it (RateLimitService's path throws a store's failure and skips
   * the cache of denials; a guard's goes through both): the decision, and where it came from.
   */
  async guardDecides(
    key: string,
    cost: number,
  ): Promise<{ decision: RateLimitDecision; source: RateLimitDecisionSource }> {
    const engine = this.limiter.engine;
    const evaluation = await engine.decide([{ policy: this.policy, key, cost, failMode: 'closed', order: 0 }]);
    const decision = evaluation.decisions[0] as RateLimitDecision;
    return { decision, source: evaluation.sources?.[0] ?? evaluation.source ?? 'store' };
  }

  private get limiter(): RateLimiter {
    if (this.running === undefined) throw new Error(`instance ${this.index} is not running`);
    return this.running.moduleRef.get(RateLimiter);
  }

  /**
   * The store's feed of changes confirms that every announcement until `realMs` was delivered, as a healthy feed
   * does every 250 ms (its pings run on real timers, which the fuzzer's jumps of real time do not wait for): the
   * cache of denials then trusts a denial as long as production would, no less.
   */
  feedConfirms(realMs: number): void {
    if (this.running !== undefined) this.limiter.engine.denyCache?.confirmed(realMs);
  }

  async stop(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    if (running === undefined) return;
    await running.moduleRef.close();
    await running.close();
  }
}
