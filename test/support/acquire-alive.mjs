// A process whose only pending work is one waiting RateLimitService.acquire() (built package, dist/): it takes
// the one unit of a 200 ms policy, then acquires another and prints "admitted" when it has it. A waiting acquire
// keeps the process alive, as pending I/O would: without that, the process would end before printing.
import 'reflect-metadata';

import { NestFactory } from '@nestjs/core';

import { RateLimitModule, RateLimitService } from '../../dist/index.js';

const app = await NestFactory.createApplicationContext(RateLimitModule.forRoot({}), { logger: false });
const limits = app.get(RateLimitService);
const policy = { name: 'alive', algorithm: 'gcra', limit: 1, window: 200 };
await limits.consume(policy, 'k');
void limits.acquire(policy, 'k', { maxWaitMs: 5000 }).then(async (decision) => {
  process.stdout.write(decision.allowed ? 'admitted\n' : 'denied\n');
  await app.close();
});
