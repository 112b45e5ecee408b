import 'reflect-metadata';

import { createServer } from 'node:net';

import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { type MicroserviceOptions, Transport } from '@nestjs/microservices';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { WsAdapter } from '@nestjs/platform-ws';

import { AppModule } from './app.module.js';

/** A free loopback port for the TCP microservice (it reports no port of its own when given 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * `node dist/main.js express [app-guard]`: Express, Apollo, socket.io (Nest's default adapter); `fastify`:
 * Fastify, Mercurius, `ws`. Each with a TCP microservice (a hybrid app). Prints `listening on <http> <tcp>`.
 */
async function main(platform: string, guard: 'module' | 'app-guard'): Promise<void> {
  const logger = ['error', 'warn', 'log'] as ('error' | 'warn' | 'log')[];
  let app: INestApplication;
  if (platform === 'express') {
    const graphql = GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true });
    app = await NestFactory.create(AppModule.with(graphql, guard), new ExpressAdapter(), { logger });
  } else {
    const graphql = GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, autoSchemaFile: true });
    app = await NestFactory.create(AppModule.with(graphql, guard), new FastifyAdapter(), { logger });
    app.useWebSocketAdapter(new WsAdapter(app));
  }
  const tcp = await freePort();
  app.connectMicroservice<MicroserviceOptions>({ transport: Transport.TCP, options: { host: '127.0.0.1', port: tcp } });
  await app.startAllMicroservices();
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  console.log(`listening on ${port} ${tcp}`);
}

void main(process.argv[2] ?? 'express', process.argv[3] === 'app-guard' ? 'app-guard' : 'module');
