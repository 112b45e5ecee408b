import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';

import { PostgresRateLimitStore, RateLimitStore, RedisRateLimitStore } from '../lib/index.js';
import { AppModule } from './app.module.js';

/** The Redis URL without its password, for the log. */
function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable REDIS_URL)';
  }
}

const app = await NestFactory.create(AppModule, new ExpressAdapter());
app.enableShutdownHooks(); // closes the Redis connection on SIGINT / SIGTERM
const port = Number(process.env.PORT ?? 3000);
// Loopback only unless HOST says otherwise (HOST=0.0.0.0 to listen on every interface).
const host = process.env.HOST ?? '127.0.0.1';
await app.listen(port, host);

const store: unknown = app.get(RateLimitStore);
const where =
  store instanceof RedisRateLimitStore
    ? `Redis at ${redacted(process.env.REDIS_URL ?? '')}`
    : store instanceof PostgresRateLimitStore
      ? `PostgreSQL at ${redacted(process.env.DATABASE_URL ?? '')}`
      : 'the in-memory store (per process; set REDIS_URL or DATABASE_URL to share limits)';
const quotas = process.env.DATABASE_URL
  ? `, the monthly quota in PostgreSQL at ${redacted(process.env.DATABASE_URL)}`
  : '';
new Logger('SampleApp').log(
  `Listening on http://${host}:${port} (GET / lists what to try) with rate limits in ${where}${quotas}`,
);
