export { fleetSvg, chartDataOf, type FleetChartData } from './chart.js';
export { FLEET_HELP, parseSimulateFleet, type FleetCommand } from './flags.js';
export {
  ARRIVAL_KINDS,
  FLEET_ALGORITHMS,
  FLEET_DEFAULTS,
  LEASE_MODES,
  type ArrivalKind,
  type FleetAlgorithm,
  type FleetOptions,
  type LeaseMode,
} from './options.js';
export { callsPerRequest, fleetTable, limitPerSecond, mostShort } from './report.js';
export { runFleet, type FleetResult, type FleetWindow } from './run.js';
export type { FleetBound } from './bounds.js';
export type { FleetSecond } from './tally.js';
