// Jest's global setup for the tiers that start redis-server and use PostgreSQL (all but test/unit and
// test/docs, see jest.config.js): before the first test, once, so that what is missing stops the run with one
// error rather than one per suite.
import { provisionPostgres } from './postgres.mjs';
import { provisionTools } from './provision.mjs';

export default async function setup() {
  provisionTools(['redis-server']);
  // Once a run: the projects `servers` and `slow` both set up with this file when a run has tests of both.
  if (globalThis.provisionedPostgres !== undefined) return;
  // read by jest-servers-teardown.mjs: Jest keeps the globals of the global setup for the teardown
  globalThis.provisionedPostgres = await provisionPostgres(process.env);
}
