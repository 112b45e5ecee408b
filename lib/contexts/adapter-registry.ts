import type { AdapterSettings, ContextAdapter, ContextType } from './context-adapter.js';
import { ADAPTER_FACTORIES } from './index.js';

/**
 * The adapters of the contexts an application uses, each made once: its file, and the optional package it
 * needs, are loaded then (so an HTTP-only app never loads GraphQL, WebSocket or microservice code).
 */
export class AdapterRegistry {
  private readonly adapters = new Map<ContextType, ContextAdapter>();
  private loading: Map<ContextType, Promise<ContextAdapter>> | undefined;

  constructor(private readonly settings: AdapterSettings) {}

  /** The adapter of `type` if it is loaded already. */
  get(type: ContextType): ContextAdapter | undefined {
    return this.adapters.get(type);
  }

  /** Whether `type` is a context this module knows (http, graphql, ws, rpc). */
  knows(type: string): type is ContextType {
    return Object.hasOwn(ADAPTER_FACTORIES, type);
  }

  /** The adapter of `type`, loading it the first time. */
  async load(type: ContextType): Promise<ContextAdapter> {
    const known = this.adapters.get(type);
    if (known !== undefined) return known;
    this.loading ??= new Map();
    let pending = this.loading.get(type);
    if (pending === undefined) {
      pending = ADAPTER_FACTORIES[type]().then(async (make) => {
        const adapter = await make(this.settings);
        this.adapters.set(type, adapter);
        return adapter;
      });
      this.loading.set(type, pending);
    }
    return pending;
  }
}
