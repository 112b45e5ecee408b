import { Controller, Get, Headers } from '@nestjs/common';

/** One route of the index: what it shows, and a command that tries it. */
interface Route {
  readonly route: string;
  readonly shows: string;
  readonly try: string;
}

/** The routes, with commands against `base`: the address the client reached the app at (PORT, HOST). */
const routesAt = (base: string): readonly Route[] => [
  {
    route: 'POST /auth/login',
    shows: 'counting by outcome: 5 failed logins per account per 15 minutes; successful ones are given back',
    try: `curl -i -X POST ${base}/auth/login -H 'content-type: application/json' -d '{"username":"alice","password":"wrong"}'`,
  },
  {
    route: 'POST /ai/complete',
    shows:
      'AI tokens charged an estimate, then settled at what the model used; a monthly quota per plan; 2 calls in flight per user; a provider budget the tenants take turns on',
    try: `curl -i -X POST ${base}/ai/complete -H 'x-api-key: demo-key-alice' -H 'content-type: application/json' -d '{"prompt":"hi","maxTokens":200}'`,
  },
  {
    route: 'GET /ai/stream?prompt=P&maxTokens=N',
    shows: 'a streamed completion (server-sent events), settled at the usage its last event reports',
    try: `curl -N '${base}/ai/stream?prompt=hi&maxTokens=200' -H 'x-api-key: demo-key-alice'`,
  },
  {
    route: 'GET /ai/usage',
    shows: "this month's quota usage, as an invoice would read it",
    try: `curl -s ${base}/ai/usage -H 'x-api-key: demo-key-bob'`,
  },
  {
    route: 'GET /reports/export?rows=N',
    shows: 'a cost per request: N exported rows out of 50,000 per hour',
    try: `curl -i '${base}/reports/export?rows=20000' -H 'x-api-key: demo-key-alice'`,
  },
  {
    route: 'POST /plans/upgrade',
    shows:
      "a plan upgrade at run time: the caller's per-user limit becomes 1,000 per minute on every instance (an override)",
    try: `curl -i -X POST ${base}/plans/upgrade -H 'x-api-key: demo-key-alice'`,
  },
  {
    route: 'POST /graphql',
    shows: 'GraphQL: greetings(count) costs count, 30 per minute per client IP',
    try: `curl -s ${base}/graphql -H 'content-type: application/json' -d '{"query":"{ greetings(count: 5) }"}'`,
  },
  {
    route: 'socket.io event chat',
    shows: 'WebSockets: 30 messages per minute, burst 5',
    try: 'see sample-app/README.md',
  },
  { route: 'GET /health', shows: 'a route without any limit (@SkipRateLimit)', try: `curl -i ${base}/health` },
];

@Controller()
export class IndexController {
  /** What the sample app has and how to try each part; itself under the default per-user limit. */
  @Get()
  index(@Headers('host') host: string | undefined): {
    app: string;
    walkthrough: string;
    headers: string;
    routes: readonly Route[];
  } {
    return {
      app: 'nest-rate-limit sample app',
      walkthrough: 'sample-app/README.md',
      headers: 'every limited answer carries RateLimit and RateLimit-Policy; a 429 also Retry-After',
      // A host[:port] as the client sent it (not pasted into shell commands when it is anything else).
      routes: routesAt(`http://${host !== undefined && /^[\w.-]+(:\d+)?$/.test(host) ? host : 'localhost:3000'}`),
    };
  }
}
