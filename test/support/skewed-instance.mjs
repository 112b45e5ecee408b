// One app instance whose clock is shifted: a Nest application context with RateLimitModule on the test's
// Redis, through the built package (dist/), with the module's default clock ('local': Date.now).
// argv: Redis URL. Reads commands on stdin, one per line, and answers each with one line:
//   offset <ms>               shifts this process's clock by <ms> from real time; answers "ok"
//   consume <count> <policy>  consumes <count> times, one after another, the JSON policy for key "one";
//                             answers the number admitted
import 'reflect-metadata';
import { createInterface } from 'node:readline';

import { NestFactory } from '@nestjs/core';

import { RateLimitModule, RateLimitService } from '../../dist/index.js';

const realNow = Date.now.bind(Date);
let offsetMs = 0;
Date.now = () => realNow() + offsetMs;

const app = await NestFactory.createApplicationContext(RateLimitModule.forRoot({ redis: { url: process.argv[2] } }), {
  logger: false,
});
const limits = app.get(RateLimitService);
process.stdout.write('ready\n');

for await (const line of createInterface({ input: process.stdin })) {
  const [command, arg, ...rest] = line.split(' ');
  if (command === 'offset') {
    offsetMs = Number(arg);
    process.stdout.write('ok\n');
  } else if (command === 'consume') {
    const policy = JSON.parse(rest.join(' '));
    let admitted = 0;
    for (let i = 0; i < Number(arg); i++) if ((await limits.consume(policy, 'one')).allowed) admitted++;
    process.stdout.write(`${admitted}\n`);
  }
}
await app.close();
