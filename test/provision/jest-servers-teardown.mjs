// Stops the embedded PostgreSQL of jest-servers.mjs, if it started one, and removes its data folder.
export default async function teardown() {
  const postgres = globalThis.provisionedPostgres;
  delete globalThis.provisionedPostgres;
  await postgres?.stop();
}
