import { describeDeployFuzzer } from './deploy-fuzzer.js';
import { postgresBacking } from './fuzz-stores.js';

// The deploy fuzzer (deploy-fuzzer.ts, issue 41) on the postgres store.

describeDeployFuzzer(postgresBacking());
