export { sheddingChartDataOf, sheddingSvg, type SheddingChartData } from './chart.js';
export { CeilingShedder, type AdaptiveLimit } from './ceiling-shedder.js';
export { TICK_MS, type ByCriticality, type Latency, type SheddingSlot, type SheddingTick } from './counts.js';
export { Dependency } from './dependency.js';
export { parseSimulateShedding, SHEDDING_HELP, type SheddingCommand } from './flags.js';
export {
  capacityOf,
  SCENARIO_DEFAULTS,
  SHEDDING_SCENARIOS,
  SHEDDING_SIM_DEFAULTS,
  SHEDDING_VARIANTS,
  type SheddingScenario,
  type SheddingSimOptions,
  type SheddingVariant,
  type TrafficMix,
} from './options.js';
export { describeScenario, labelOf, sheddingSummary, sheddingTable, VARIANT_LABELS } from './report.js';
export { runShedding, sheddingOptionsOf, type SheddingResult } from './run.js';
export { VegasLimit, type VegasSettings } from './vegas.js';
