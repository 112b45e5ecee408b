#!/usr/bin/env node
// The command line, as built by `npm run build -w @nest-rate-limit/simulator` (see tsconfig.json for the layout).
await import('../dist/packages/simulator/src/cli.js');
