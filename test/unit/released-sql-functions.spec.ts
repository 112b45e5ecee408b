import { readdirSync, readFileSync } from 'node:fs';

import { postgresSchemaSql } from '../../lib/index.js';

// The rule of CONTRIBUTING.md, "Changing the PostgreSQL schema": an instance of a released version calls the
// functions of its release by name, on a schema that a later version migrates too. So a later version creates
// every function of a release exactly as that release did, and a function whose text changes gets a new name.
// test/support/schema-<version>.sql holds what each release's postgresSchemaSql('__SCHEMA__') wrote.

const SUPPORT = new URL('../support/', import.meta.url);
const RELEASES = readdirSync(SUPPORT)
  .map((file) => /^schema-(\d+\.\d+\.\d+)\.sql$/.exec(file)?.[1])
  .filter((version) => version !== undefined);

/** Each function that `sql` creates, by name, with the whole statement that creates it. */
function functionsOf(sql: string): Map<string, string> {
  const functions = new Map<string, string>();
  for (const [statement, name = ''] of sql.matchAll(
    /CREATE OR REPLACE FUNCTION "__SCHEMA__"\.(\w+)\([\s\S]*?\$fn\$;/g,
  )) {
    if (functions.has(name)) throw new Error(`${name} is created twice`);
    functions.set(name, statement);
  }
  return functions;
}

const current = functionsOf(postgresSchemaSql('__SCHEMA__'));

it('has the schema of every release to check against', () => {
  expect(RELEASES).toContain('0.1.0');
});

describe.each(RELEASES)('the functions of %s', (version) => {
  const released = functionsOf(readFileSync(new URL(`schema-${version}.sql`, SUPPORT), 'utf8'));

  it('are found in its schema', () => {
    expect(released.size).toBeGreaterThan(0);
  });

  it.each([...released.keys()])('%s is created as the release created it', (name) => {
    // A function of the release whose text changed: give the new one a new name, and keep this one.
    expect(current.get(name)).toBe(released.get(name));
  });
});
