// express 5 is installed (by @nestjs/platform-express) without its types, and @types/express is not a dev
// dependency: the docs' samples that name express's Request and Response are checked against the members they
// use, declared here as express declares them.
declare module 'express' {
  import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';

  export interface Request extends IncomingMessage {
    headers: IncomingHttpHeaders;
    path: string;
    ip?: string;
    header(name: string): string | undefined;
  }

  export interface Response extends ServerResponse {
    status(code: number): this;
    json(body: unknown): this;
  }
}
