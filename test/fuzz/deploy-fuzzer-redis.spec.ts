import { describeDeployFuzzer } from './deploy-fuzzer.js';
import { redisBacking } from './fuzz-stores.js';

// The deploy fuzzer (deploy-fuzzer.ts, issue 41) on the redis store.

describeDeployFuzzer(redisBacking());
