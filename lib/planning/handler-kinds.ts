import { UseGuards } from '@nestjs/common';

/** The kinds of Nest execution context the limiter decides in (`ctx.getType()`). */
export type ContextType = 'http' | 'graphql' | 'ws' | 'rpc';

/**
 * What Nest calls a method of a class for, as far as rate limiting goes: an HTTP route (any controller
 * method), a microservice message or event handler, a GraphQL root resolver (query, mutation, subscription)
 * or field resolver, a WebSocket message handler, or nothing (a plain provider method).
 */
export type HandlerKind = 'http' | 'rpc' | 'rpc-event' | 'graphql' | 'graphql-field' | 'ws' | 'none';

/**
 * The metadata keys the public decorators of the optional packages write (@MessagePattern/@EventPattern,
 * @Query/@Mutation/@Subscription, @ResolveField, @SubscribeMessage/@WebSocketGateway), stable since Nest 7.
 * They are read by name so that an application without those packages loads none of them; a test applies
 * the real decorators and checks these keys, so a change in Nest is caught.
 */
export const HANDLER_METADATA = {
  pattern: 'microservices:pattern',
  /** PatternHandler: 1 request-response (@MessagePattern), 2 event (@EventPattern). */
  patternHandler: 'microservices:handler_type',
  resolverType: 'graphql:resolver_type',
  resolveProperty: 'graphql:resolve_property',
  wsMessage: 'message',
  wsGateway: 'websockets:is_gateway',
} as const;

const EVENT_HANDLER = 2;
const ROOT_RESOLVER_TYPES = new Set(['Query', 'Mutation', 'Subscription']);

/** The kind of handler `method` of `classRef` is; `isController` for classes Nest knows as controllers. */
export function handlerKindOf(classRef: object, handler: object, isController: boolean): HandlerKind {
  if (isController) {
    if (Reflect.getMetadata(HANDLER_METADATA.pattern, handler) !== undefined) {
      return Reflect.getMetadata(HANDLER_METADATA.patternHandler, handler) === EVENT_HANDLER ? 'rpc-event' : 'rpc';
    }
    return 'http';
  }
  const resolverType: unknown = Reflect.getMetadata(HANDLER_METADATA.resolverType, handler);
  if (typeof resolverType === 'string' && ROOT_RESOLVER_TYPES.has(resolverType)) return 'graphql';
  if (Reflect.getMetadata(HANDLER_METADATA.resolveProperty, handler) === true) return 'graphql-field';
  if (
    Reflect.getMetadata(HANDLER_METADATA.wsMessage, handler) !== undefined &&
    Reflect.getMetadata(HANDLER_METADATA.wsGateway, classRef) === true
  ) {
    return 'ws';
  }
  return 'none';
}

/** The context type whose adapter decides handlers of a kind. */
export function contextOf(kind: Exclude<HandlerKind, 'none'>): ContextType {
  switch (kind) {
    case 'rpc':
    case 'rpc-event':
      return 'rpc';
    case 'graphql':
    case 'graphql-field':
      return 'graphql';
    default:
      return kind;
  }
}

/**
 * The metadata key a class decorator of Nest's (@UseGuards, @UseInterceptors) writes, learned from the public
 * decorator itself rather than imported from Nest's constants (which are not public API).
 */
export function metadataKeyOf(
  decorator: (enhancer: new () => object) => ClassDecorator,
  name: string,
): string | symbol {
  const probe = class {};
  decorator(class Probe {})(probe);
  const keys = Reflect.getOwnMetadataKeys(probe);
  if (keys.length !== 1) throw new Error(`nest-rate-limit: cannot tell @${name}' metadata key (${String(keys)})`);
  return keys[0] as string | symbol;
}

/** The metadata key of @UseGuards: guards of a class or handler may authenticate after the global guard. */
export const GUARDS_METADATA_KEY: string | symbol = metadataKeyOf(UseGuards, 'UseGuards');
