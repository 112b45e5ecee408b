#!/usr/bin/env node
// `npx nest-rate-limit <command>`: an operator's command line on the app's store (lib/cli/run.ts).
import { runCli } from './run.js';

void runCli(process.argv.slice(2), process.env, {
  write: (text) => process.stdout.write(`${text}\n`),
  error: (text) => process.stderr.write(`${text}\n`),
}).then((code) => {
  process.exitCode = code;
});
