import type { Criticality } from '../../../../lib/policy/criticality.js';
import { LoadShedder, type SheddingTicket } from '../../../../lib/shedding/load-shedder.js';
import { EventQueue } from '../fleet/event-queue.js';
import { seeded } from '../fleet/random.js';
import {
  latencyOf,
  SheddingCounts,
  TICK_MS,
  type ByCriticality,
  type Latency,
  type SheddingSlot,
  type SheddingTick,
} from './counts.js';
import { CeilingShedder } from './ceiling-shedder.js';
import { Dependency } from './dependency.js';
import {
  capacityOf,
  checkSheddingOptions,
  SCENARIO_DEFAULTS,
  SHEDDING_SIM_DEFAULTS,
  type SheddingSimOptions,
} from './options.js';
import { VegasLimit } from './vegas.js';

/** A run: its counts per second, the limit every TICK_MS, and the totals. */
export interface SheddingResult {
  readonly options: SheddingSimOptions;
  /** The dependency's capacity at its first service time, requests a second. */
  readonly capacity: number;
  readonly slots: readonly SheddingSlot[];
  readonly slotMs: number;
  readonly ticks: readonly SheddingTick[];
  readonly offered: ByCriticality;
  readonly shed: ByCriticality;
  /** Responses within the client's timeout, by criticality (those sent in the run, served in it or just after). */
  readonly good: ByCriticality;
  /** Responses within the timeout per second of the run, all criticalities. */
  readonly goodput: number;
  /** Responses after their client had left. */
  readonly late: number;
  /** The response times of every critical request admitted. */
  readonly critical: Latency;
}

/** One request sent to the instance. */
interface Request {
  readonly criticality: Criticality;
  readonly sentUs: number;
  /** The service time's factor, drawn when the request is sent (the same in every variant of a seed). */
  readonly factor: number;
  ticket: SheddingTicket | undefined;
  served: boolean;
}

type SimEvent =
  | { readonly kind: 'arrival' }
  | { readonly kind: 'served'; readonly request: Request }
  | { readonly kind: 'gone'; readonly request: Request }
  | { readonly kind: 'tick' };

/** What admits requests: LoadShedder, CeilingShedder over Vegas, or for `off` a door that admits all. */
interface Admission {
  readonly limit: number;
  readonly inFlight: number;
  admit(criticality: Criticality): SheddingTicket | undefined;
  release(ticket: SheddingTicket, sample: boolean): void;
}

/** Shedding off: every request admitted, counted in flight as the shedders count theirs. */
class OpenDoor implements Admission {
  readonly limit = NaN;
  inFlight = 0;
  admit(): SheddingTicket {
    this.inFlight++;
    return { startedMs: 0, done: false };
  }
  release(ticket: SheddingTicket): void {
    if (ticket.done) return;
    ticket.done = true;
    this.inFlight--;
  }
}

/** The variant's admission, on the run's clock (`nowMs`). */
function admissionOf(o: SheddingSimOptions, nowMs: () => number): Admission {
  const { shedding } = o;
  switch (o.variant) {
    case 'off':
      return new OpenDoor();
    case 'gradient2':
      return new LoadShedder(shedding, nowMs);
    case 'vegas': {
      const vegas = new VegasLimit({ ...shedding, probeMultiplier: o.vegasProbe }, seeded(o.seed ^ STREAM.probe));
      return new CeilingShedder(shedding, vegas, nowMs);
    }
  }
}

/** Seeds of the run's separate sources of numbers, so that each variant sees the same requests. */
const STREAM = { kinds: 0x9e3779b9, service: 0x85ebca6b, probe: 0xc2b2ae35 } as const;

/** The run's options: the defaults, the scenario's, then those asked for. */
export function sheddingOptionsOf(asked: Partial<SheddingSimOptions> = {}): SheddingSimOptions {
  const scenario = asked.scenario ?? SHEDDING_SIM_DEFAULTS.scenario;
  return checkSheddingOptions({ ...SHEDDING_SIM_DEFAULTS, ...SCENARIO_DEFAULTS[scenario], ...asked });
}

/**
 * Simulates one app instance in fake time: open-loop Poisson arrivals (their rate rising linearly from `loadFrom`
 * to `loadTo` times the dependency's capacity), each of a criticality drawn by the mix, admitted (or refused, 503)
 * by the variant's shedder, then served by the dependency (Dependency: FIFO, fixed concurrency); the shedder is
 * given each request back with its latency as a sample when its response ends, or when its client gives up first
 * (after `timeoutMs`: its connection closes and the library's HTTP gate releases the slot with a sample, while
 * the dependency still serves the request). Deterministic for a seed, and every variant of a seed sees the same
 * requests.
 * @example runShedding({ variant: 'gradient2', loadTo: 4 }).goodput
 */
export function runShedding(asked: Partial<SheddingSimOptions> = {}): SheddingResult {
  const o = sheddingOptionsOf(asked);
  const run = new SheddingRun(o);
  run.play();
  const { capacity, counts } = run;
  const { total } = counts;
  const good = total.good;
  return {
    ...{ options: o, capacity, slots: counts.slots(), slotMs: counts.slotMs, ticks: counts.ticks },
    ...{ offered: total.offered, shed: total.shed, good, late: total.late },
    goodput: ((good.critical + good.default + good.sheddable) * 1000) / o.durationMs,
    critical: latencyOf(total.criticalMs),
  };
}

/** One run on its fake clock: the instance's admission, the dependency behind it, and what each event does. */
class SheddingRun {
  readonly capacity: number;
  readonly counts: SheddingCounts;
  private readonly events = new EventQueue<SimEvent>();
  private nowUs = 0;
  private readonly admission: Admission;
  private readonly dependency: Dependency<Request>;
  private readonly arrivals: Arrivals;
  private readonly kinds: () => number;
  private readonly service: () => number;

  constructor(private readonly o: SheddingSimOptions) {
    this.capacity = capacityOf(o);
    this.admission = admissionOf(o, () => this.nowMs);
    const changeUs = o.scenario === 'slower-deploy' ? (o.durationMs * 1000) / 2 : Infinity;
    this.dependency = new Dependency<Request>(
      o.concurrency,
      (r, atUs) => (atUs < changeUs ? o.serviceMs : o.slowerServiceMs) * 1000 * r.factor,
      (atUs, request) => this.events.push(atUs, { kind: 'served', request }),
    );
    this.counts = new SheddingCounts(1000, o.durationMs);
    this.arrivals = new Arrivals(o, this.capacity);
    this.kinds = seeded(o.seed ^ STREAM.kinds);
    this.service = seeded(o.seed ^ STREAM.service);
  }

  private get nowMs(): number {
    return this.nowUs / 1000;
  }

  /** Runs every event in time order: arrivals until `durationMs`, then the responses still due after it. */
  play(): void {
    const { events, o } = this;
    events.push(this.arrivals.next(), { kind: 'arrival' });
    for (let t = TICK_MS; t <= o.durationMs; t += TICK_MS) events.push(t * 1000, { kind: 'tick' });
    for (;;) {
      const atUs = events.nextUs;
      const event = events.pop();
      if (event === undefined) break;
      this.nowUs = atUs;
      switch (event.kind) {
        case 'arrival':
          this.arrive();
          break;
        case 'served':
          this.served(event.request);
          break;
        case 'gone':
          this.gone(event.request);
          break;
        case 'tick':
          this.tick();
          break;
      }
    }
  }

  /** A request is sent: admitted and given to the dependency, or refused; then the next arrival is queued. */
  private arrive(): void {
    const { o, counts, nowUs } = this;
    const criticality = criticalityOf(this.kinds(), o);
    const factor = 1 + o.serviceJitter * (2 * this.service() - 1);
    counts.offer(this.nowMs, criticality);
    const ticket = this.admission.admit(criticality);
    if (ticket === undefined) counts.refuse(this.nowMs, criticality);
    else {
      const request: Request = { criticality, sentUs: nowUs, factor, ticket, served: false };
      this.events.push(nowUs + o.timeoutMs * 1000 + 1, { kind: 'gone', request });
      this.dependency.submit(request, nowUs);
    }
    const nextUs = this.arrivals.next();
    if (nextUs < o.durationMs * 1000) this.events.push(nextUs, { kind: 'arrival' });
  }

  /** The dependency served `r`: its response ends, counted good or late, and the shedder gets its sample. */
  private served(r: Request): void {
    r.served = true;
    this.dependency.finish(this.nowUs);
    this.counts.respond(this.nowMs, r.sentUs / 1000, r.criticality, this.o.timeoutMs);
    if (r.ticket !== undefined) this.admission.release(r.ticket, true);
  }

  /**
   * The client gave up: its connection closes and the response ends there. As lib/limiter/shedding-gate.ts does,
   * its wait (the timeout) is a sample: the strongest sign of a queue.
   */
  private gone(r: Request): void {
    if (!r.served && r.ticket !== undefined) this.admission.release(r.ticket, true);
  }

  /** Every TICK_MS: where the limit, the requests in flight and the dependency's queue stand. */
  private tick(): void {
    this.counts.tick({
      atMs: this.nowMs,
      limit: this.admission.limit,
      inFlight: this.admission.inFlight,
      queued: this.dependency.queued,
    });
  }
}

/** The criticality of a request whose draw is `u` (0–1), by the mix: critical first, then default, then sheddable. */
function criticalityOf(u: number, o: SheddingSimOptions): Criticality {
  if (u < o.mix.critical) return 'critical';
  return u < o.mix.critical + o.mix.default ? 'default' : 'sheddable';
}

/**
 * Open-loop Poisson arrivals whose rate rises linearly from `loadFrom` to `loadTo` times the capacity over the
 * run, drawn by thinning: candidates at the highest rate, each kept with the ratio of the rate then to it.
 */
class Arrivals {
  private readonly random: () => number;
  private readonly peakPerUs: number;
  private atUs = 0;

  constructor(
    private readonly o: SheddingSimOptions,
    private readonly capacity: number,
  ) {
    this.random = seeded(o.seed);
    this.peakPerUs = (capacity * Math.max(o.loadFrom, o.loadTo)) / 1e6;
  }

  /** The offered rate at `atUs`, requests per µs. */
  private rateAt(atUs: number): number {
    const { loadFrom, loadTo, durationMs } = this.o;
    const load = loadFrom + ((loadTo - loadFrom) * atUs) / (durationMs * 1000);
    return (this.capacity * load) / 1e6;
  }

  /** The time (whole µs) of the next arrival. */
  next(): number {
    for (;;) {
      this.atUs += -Math.log(1 - this.random()) / this.peakPerUs;
      if (this.random() * this.peakPerUs < this.rateAt(this.atUs)) return Math.floor(this.atUs);
    }
  }
}
