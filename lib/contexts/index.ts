import type { AdapterFactory, ContextType } from './context-adapter.js';

/**
 * The adapter factory of each context type, each in a file of its own that is imported only when the
 * application has handlers of that type: an HTTP-only app loads neither @nestjs/graphql, @nestjs/websockets
 * nor @nestjs/microservices.
 */
export const ADAPTER_FACTORIES: Readonly<Record<ContextType, () => Promise<AdapterFactory>>> = {
  http: async () => (await import('./http.adapter.js')).httpAdapter,
  graphql: async () => (await import('./graphql.adapter.js')).graphqlAdapter,
  ws: async () => (await import('./ws.adapter.js')).wsAdapter,
  rpc: async () => (await import('./rpc.adapter.js')).rpcAdapter,
};
