import { runInNewContext } from 'node:vm';

import { FailureReporter } from '../../lib/engine/failure-reporter.js';

// Under Jest's VM modules a driver's error (Node's own, like ECONNREFUSED) comes from another realm: it is not
// `instanceof Error` in the module's code, which wrapped it in a new Error("Error: connect ECONNREFUSED ...")
// and so gave onError an error without its `code`. Found by test/postgres/postgres-store.spec.ts.

describe('an error of another realm', () => {
  it('reaches onError as it is, with its code, and the log with its message once', () => {
    const foreign = runInNewContext(
      'Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })',
    ) as Error & { code: string };
    expect(foreign instanceof Error).toBe(false);
    const seen: unknown[] = [];
    const lines: string[] = [];
    const logger = { log: () => undefined, warn: () => undefined, error: (line: string) => lines.push(line) };
    new FailureReporter(logger, (error) => seen.push(error)).report(foreign, ['closed']);
    expect(seen[0]).toBe(foreign);
    expect(lines).toEqual(['Rate limiter store failure for policy closed: connect ECONNREFUSED 127.0.0.1:1']);
  });
});
