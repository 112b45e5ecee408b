import type { AdapterFactory, ContextType } from './context-adapter.js';

/**
 * The adapter factory of each context type, each in a file of its own that is imported only when the
 * application has handlers of that type: an HTTP-only app loads neither @nestjs/graphql, @nestjs/websockets
 * nor @nestjs/microservices.
 */
export const ADAPTER_FACTORIES: Readonly<Partial<Record<ContextType, () => Promise<AdapterFactory>>>> = {
  http: async () => (await import('./http.adapter.js')).httpAdapter,
};
