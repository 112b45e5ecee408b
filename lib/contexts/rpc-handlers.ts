/**
 * Which microservice handlers are request-response (`@MessagePattern`) and which are events (`@EventPattern`),
 * read from the metadata Nest's decorators write, and the check that they still write it.
 */

/**
 * The metadata key `@MessagePattern` and `@EventPattern` write on the handler function (Nest's
 * `PATTERN_HANDLER_METADATA`). Spelled out here because Nest exports it only from its internal
 * `constants.js`; a unit test applies the real decorators and checks it, so a change in Nest is caught.
 */
export const RPC_HANDLER_TYPE_METADATA = 'microservices:handler_type';
/** Nest's `PatternHandler.MESSAGE` (request-response) and `PatternHandler.EVENT`: not exported by Nest either. */
export const RPC_MESSAGE_HANDLER = 1;
export const RPC_EVENT_HANDLER = 2;

/**
 * What the adapter takes from `@nestjs/microservices` (its own RpcException, which Nest's filters recognise),
 * spelled out so that the published types name no optional package.
 */
export interface MicroservicesPackage {
  readonly EventPattern: (pattern: string) => MethodDecorator;
  readonly MessagePattern: (pattern: string) => MethodDecorator;
  readonly RpcException: new (error: object) => Error;
}

export type RpcHandlerKind = 'message' | 'event';

/**
 * The kind of each handler, read once from its metadata (handlers are the controllers' prototype methods, so
 * the cache holds a few entries and lets them go with their classes).
 */
const kinds = new WeakMap<object, RpcHandlerKind>();

/**
 * Whether `handler` is an `@EventPattern` handler (`'event'`) or a request-response one (`'message'`). A
 * handler without the metadata (called through some other path) is taken as a message: its denial is then an
 * RpcException, which some client can receive, rather than a silent drop.
 */
export function rpcHandlerKind(handler: object): RpcHandlerKind {
  let kind = kinds.get(handler);
  if (kind === undefined) {
    const type: unknown = Reflect.getMetadata(RPC_HANDLER_TYPE_METADATA, handler);
    kind = type === RPC_EVENT_HANDLER ? 'event' : 'message';
    kinds.set(handler, kind);
  }
  return kind;
}

/**
 * Checks, once per adapter, that Nest's decorators still write the metadata this file reads: applies the real
 * `@EventPattern` and `@MessagePattern` to two throw-away functions. Returns what is wrong, or undefined.
 */
export function checkNestMetadata({ EventPattern, MessagePattern }: MicroservicesPackage): string | undefined {
  const read = (decorate: MethodDecorator): unknown => {
    const descriptor: PropertyDescriptor = { value: function probe(): void {} };
    decorate({}, 'probe', descriptor);
    return Reflect.getMetadata(RPC_HANDLER_TYPE_METADATA, descriptor.value as object);
  };
  const event = read(EventPattern('nest-rate-limit:probe'));
  const message = read(MessagePattern('nest-rate-limit:probe'));
  if (event === RPC_EVENT_HANDLER && message === RPC_MESSAGE_HANDLER) return undefined;
  return (
    `@nestjs/microservices no longer marks handlers as expected (metadata "${RPC_HANDLER_TYPE_METADATA}": ` +
    `@EventPattern wrote ${JSON.stringify(event)}, expected ${RPC_EVENT_HANDLER}; @MessagePattern wrote ` +
    `${JSON.stringify(message)}, expected ${RPC_MESSAGE_HANDLER}). Denied events will be answered like messages ` +
    '(an RpcException, which Nest logs for each of them) instead of being dropped quietly.'
  );
}
