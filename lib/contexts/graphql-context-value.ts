import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Where the Nest GraphQL drivers keep the HTTP request and response in the GraphQL context value, and the
 * checks that tell them apart.
 */

/** An Express response (`req.res`) or any Node ServerResponse. */
export type NodeResponse = Pick<ServerResponse, 'setHeader' | 'headersSent'>;

/** A Fastify reply as Mercurius puts it on the context (`reply`); a subscription's stand-in has no `header`. */
export interface FastifyReplyLike {
  header(name: string, value: string): unknown;
  readonly sent?: boolean;
  readonly raw?: { readonly headersSent?: boolean };
}

/**
 * The GraphQL context value as the Nest drivers build it. Apollo (Express): `{ req }`, the Express request,
 * whose `res` Express sets; Apollo subscriptions (graphql-ws): `req` is graphql-ws's context, whose
 * `extra.request` is the upgrade request. Mercurius: `{ req, reply, app }` with the Fastify request and reply;
 * Mercurius subscriptions: `{ request, reply: { request } }` with no `req`. Apps may add their own fields.
 */
export interface GraphQLContextValue {
  req?: unknown;
  request?: unknown;
  reply?: unknown;
  extra?: { request?: unknown };
}

export const isObject = (value: unknown): value is Record<PropertyKey, unknown> =>
  typeof value === 'object' && value !== null;

/** A Node IncomingMessage, as opposed to a Fastify request (which wraps one as `raw`). */
const isIncomingMessage = (value: unknown): value is IncomingMessage =>
  isObject(value) && isObject(value.socket) && isObject(value.headers) && typeof value.method === 'string';

export const isNodeResponse = (value: unknown): value is NodeResponse =>
  isObject(value) && typeof value.setHeader === 'function' && typeof value.headersSent === 'boolean';

const isFastifyReply = (value: unknown): value is FastifyReplyLike =>
  isObject(value) && typeof value.header === 'function';

/** The Node request under an Express request (itself), a Fastify request (`raw`) or graphql-ws's context. */
function incomingMessageOf(value: unknown): IncomingMessage | undefined {
  if (!isObject(value)) return undefined;
  if (isIncomingMessage(value.raw)) return value.raw;
  if (isIncomingMessage(value)) return value;
  if (isObject(value.extra)) return incomingMessageOf(value.extra.request);
  return undefined;
}

/** The HTTP request under the operation: the context's `req`, `request` (Mercurius subscriptions) or graphql-ws's. */
export function requestIn(gql: GraphQLContextValue): IncomingMessage | undefined {
  return incomingMessageOf(gql.req) ?? incomingMessageOf(gql.request) ?? incomingMessageOf(gql);
}

/** The operation's HTTP response: Mercurius's `reply` (Fastify), else Express's `req.res`; undefined without one. */
export function responseIn(gql: GraphQLContextValue | undefined): FastifyReplyLike | NodeResponse | undefined {
  if (isFastifyReply(gql?.reply)) return gql.reply;
  const res = isObject(gql?.req) ? gql.req.res : undefined;
  return isNodeResponse(res) ? res : undefined;
}
