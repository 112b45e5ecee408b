// One app of the HTTP benchmark: `node --import ./bench/peers.mjs bench/app.mjs <variant> <redisUrl>`.
// A Nest (Express) app with one JSON route, GET /hello -> {"hello":"world"}, and the rate limiter of the
// variant. Prints its port on stdout, serves until killed. Limits are far above what the benchmark sends:
// it measures the limiter's overhead, not denials. Started with an IPC channel, it answers the message
// 'stats' with { storeFailures }: the store failures this module reported (onError) so far.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

import { Hello } from './hello.mjs';
import { variantsOn } from './variants.mjs';

const [variant, redisUrl] = process.argv.slice(2);

for (const event of ['unhandledRejection', 'uncaughtException']) {
  process.on(event, (error) => {
    process.stderr.write(`${variant}: ${event}: ${error?.stack ?? error}\n`);
    process.exit(1);
  });
}

let storeFailures = 0;
process.on('message', (message) => {
  if (message === 'stats') process.send?.({ storeFailures });
});
const VARIANTS = variantsOn(redisUrl, () => storeFailures++);

if (!(variant in VARIANTS)) {
  process.stderr.write(`unknown variant ${variant}; one of ${Object.keys(VARIANTS).join(', ')}\n`);
  process.exit(2);
}

class BenchModule {}
const AppModule = Reflect.decorate([Module({ ...VARIANTS[variant](), controllers: [Hello] })], BenchModule);

const app = await NestFactory.create(AppModule, { logger: ['error'] });
if (process.env.BENCH_INJECT !== undefined) {
  // In-process mode (bench/in-process.mjs): no socket, requests injected into the Express app.
  const { injectRequests } = await import('./inject.mjs');
  await app.init();
  const result = await injectRequests(app.getHttpAdapter().getInstance(), process.env.BENCH_INJECT);
  process.stdout.write(`${JSON.stringify({ variant, ...result, storeFailures })}\n`);
  await app.close();
  process.exit(0);
}
if (process.env.BENCH_ALLOC !== undefined) {
  // Allocation mode (bench/alloc-probe.mjs): the heap's growth per injected request, no collection running.
  const { measureAllocation } = await import('./alloc-inject.mjs');
  await app.init();
  const result = await measureAllocation(app.getHttpAdapter().getInstance(), process.env.BENCH_ALLOC);
  process.stdout.write(`${JSON.stringify({ variant, ...result, storeFailures })}\n`);
  await app.close();
  process.exit(0);
}
app.enableShutdownHooks();
await app.listen(0, '127.0.0.1');
process.stdout.write(`${app.getHttpServer().address().port}\n`);
