#!/usr/bin/env node
// Prints what each Jest run of CI found (`node .ci/jest-summary.mjs .tmp/jest-results.json .tmp/jest-slow.json`,
// the files of --outputFile) and fails when one is missing or ran no test: a run that found nothing to run is no
// pass. Whether tests failed is the exit status of the run itself (.ci/jest-exits).
import { existsSync, readFileSync } from 'node:fs';

let status = 0;
for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) {
    console.log(`${file}: missing (the run did not finish)`);
    status = 1;
    continue;
  }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  console.log(`${file}: ${r.numPassedTests} passed, ${r.numFailedTests} failed`);
  if (r.numTotalTests === 0) status = 1;
}
process.exit(status);
