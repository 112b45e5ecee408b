export default async function teardown() {
  await globalThis.provisionedPostgres?.stop();
}
