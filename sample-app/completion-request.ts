import { BadRequestException, createParamDecorator, type ExecutionContext } from '@nestjs/common';

import { type ModelRequest, promptTokensOf } from './ai-provider.service.js';

/* What a completion route accepts, checked twice from one function: by the estimate the limiter charges before
   the handler runs, and by the handler's parameter, which answers 400. */

/** Longest prompt accepted, in characters (about MAX_PROMPT_CHARS / 4 tokens). */
export const MAX_PROMPT_CHARS = 16_000;
/** Largest `maxTokens` accepted. With MAX_PROMPT_CHARS, every valid estimate fits the bucket's burst. */
export const MAX_TOKENS = 16_000;

/** The request, on Express and Fastify alike: both parse a JSON body and the query before the guards run. */
interface HttpRequest {
  method: string;
  body?: { prompt?: unknown; maxTokens?: unknown };
  query?: { prompt?: unknown; maxTokens?: unknown };
}

/** The completion a request asks for (a POST's JSON body, a stream's query), or what is wrong with it. */
function modelRequestOf(req: HttpRequest): ModelRequest | string {
  const { prompt, maxTokens: raw } = (req.method === 'GET' ? req.query : req.body) ?? {};
  // A query's maxTokens is text: decimal digits only, so that '1e3' or ' 5' are refused as the body's would be.
  const maxTokens = typeof raw === 'string' && /^\d{1,6}$/.test(raw) ? Number(raw) : raw;
  if (typeof prompt !== 'string' || prompt === '' || prompt.length > MAX_PROMPT_CHARS) {
    return `prompt must be a string of 1 to ${MAX_PROMPT_CHARS} characters`;
  }
  if (typeof maxTokens !== 'number' || !Number.isSafeInteger(maxTokens) || maxTokens < 1 || maxTokens > MAX_TOKENS) {
    return `maxTokens must be an integer from 1 to ${MAX_TOKENS}`;
  }
  return { prompt, maxTokens };
}

/**
 * The estimate charged before the handler runs: the prompt's tokens and all of `maxTokens`. A request the
 * handler will refuse (400) is estimated at nothing; its charge would be given back anyway.
 */
export const estimate = (ctx: ExecutionContext): number => {
  const request = modelRequestOf(ctx.switchToHttp().getRequest<HttpRequest>());
  return typeof request === 'string' ? 0 : promptTokensOf(request.prompt) + request.maxTokens;
};

/** The completion the request asks for, or 400 (estimated at nothing: nothing was charged for it). */
export const AskedFor = createParamDecorator((_data: unknown, ctx: ExecutionContext): ModelRequest => {
  const request = modelRequestOf(ctx.switchToHttp().getRequest<HttpRequest>());
  if (typeof request === 'string') throw new BadRequestException(request);
  return request;
});
