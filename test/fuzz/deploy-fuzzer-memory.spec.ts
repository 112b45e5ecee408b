import { describeDeployFuzzer } from './deploy-fuzzer.js';
import { memoryBacking } from './fuzz-stores.js';

// The deploy fuzzer (deploy-fuzzer.ts, issue 41) on the memory store.

describeDeployFuzzer(memoryBacking);
