import type { AlgorithmKernel } from './index.js';

/** Where one algorithm kernel is implemented, once in each language (paths from lib/algorithms/). */
export interface Twins {
  /** The TypeScript step (ALGORITHM_STEPS): the memory store's, and the reference of the others. */
  readonly step: string;
  /** Its export in `step`. */
  readonly stepExport: string;
  /**
   * The Lua the Redis store runs: the file whose maker (`local function <maker>()`, in the dispatcher's MAKERS by
   * the kernel's code) builds the twin. A fixed window's and a GCRA's file also hold what the lean path runs
   * (lean.lua), by the same decision function.
   */
  readonly lua: string;
  readonly maker: string;
  /** The SQL of the PostgreSQL store. */
  readonly sql: string;
}

/**
 * Each algorithm kernel's twins, named in one place: test/unit/algorithms/twins.spec.ts holds every kernel to
 * files that exist and define what this says. The period counter, which the fixed windows and the quota share,
 * is lib/algorithms/period-counter.ts (its SQL inside) and period-counter.lua.
 */
export const TWINS: Readonly<Record<AlgorithmKernel, Twins>> = {
  'fixed-window': {
    step: 'fixed-window/fixed-window.ts',
    stepExport: 'fixedWindow',
    lua: 'fixed-window/fixed-window.lua',
    maker: 'make_FW',
    sql: 'fixed-window/fixed-window.sql.ts',
  },
  'sliding-window-log': {
    step: 'sliding-window-log/sliding-window-log.ts',
    stepExport: 'slidingWindowLog',
    lua: 'sliding-window-log/sliding-window-log.lua',
    maker: 'make_SWL',
    sql: 'sliding-window-log/sliding-window-log.sql.ts',
  },
  'sliding-window-counter': {
    step: 'sliding-window-counter/sliding-window-counter.ts',
    stepExport: 'slidingWindowCounter',
    lua: 'sliding-window-counter/sliding-window-counter.lua',
    maker: 'make_SWC',
    sql: 'sliding-window-counter/sliding-window-counter.sql.ts',
  },
  'token-bucket': {
    step: 'token-bucket/token-bucket.ts',
    stepExport: 'tokenBucket',
    lua: 'token-bucket/token-bucket.lua',
    maker: 'make_TB',
    sql: 'token-bucket/token-bucket.sql.ts',
  },
  gcra: {
    step: 'gcra/gcra.ts',
    stepExport: 'gcra',
    lua: 'gcra/gcra.lua',
    maker: 'make_GCRA',
    sql: 'gcra/gcra.sql.ts',
  },
  quota: {
    step: 'quota/quota.ts',
    stepExport: 'quota',
    lua: 'quota/quota.lua',
    maker: 'make_QUOTA',
    sql: 'quota/quota.sql.ts',
  },
  concurrency: {
    step: 'concurrency/concurrency.ts',
    stepExport: 'concurrency',
    lua: 'concurrency/concurrency.lua',
    maker: 'make_CONC',
    sql: 'concurrency/concurrency.sql.ts',
  },
  'fixed-window-first-request': {
    step: 'fixed-window/fixed-window.ts',
    stepExport: 'fixedWindowFromFirstRequest',
    lua: 'fixed-window/fixed-window.lua',
    maker: 'make_FWF',
    sql: 'fixed-window/fixed-window.sql.ts',
  },
  'gcra-per-plan': {
    step: 'gcra/gcra.ts',
    stepExport: 'gcraPerPlan',
    lua: 'gcra/gcra.lua',
    maker: 'make_GCRAP',
    sql: 'gcra/gcra.sql.ts',
  },
};
