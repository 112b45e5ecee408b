import type { ExecutionContext } from '@nestjs/common';
import { MessageBody, SubscribeMessage, WebSocketGateway, WsException } from '@nestjs/websockets';

import { RateLimit, RateLimitService } from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import type { Message } from '../websockets/gateways.js';
import { ask, createWsApp, type Platform, type WsApp } from '../websockets/ws-kit.js';
import { accountOf, checkCredentials, type Credentials, LOGIN } from './fixtures.js';

const dataAccount = (ctx: ExecutionContext): string | undefined => accountOf(ctx.switchToWs().getData<Credentials>());

@WebSocketGateway()
class LoginGateway {
  @SubscribeMessage('login')
  @RateLimit({ ...LOGIN, key: dataAccount })
  login(@MessageBody() credentials: Credentials) {
    try {
      checkCredentials(credentials);
    } catch (error) {
      throw new WsException((error as Error).message);
    }
    return { event: 'logged-in', data: credentials.account };
  }
}

/** 'ok' (answered), 'failed' (the handler's WsException) or 'limited' (the limiter's denial). */
function outcomeOf(message: Message): string {
  if (message.event === 'logged-in') return 'ok';
  const data = message.data as { code?: string; message?: string };
  if (message.event !== 'exception') return `other: ${message.event}`;
  return data.code === 'RATE_LIMITED' ? 'limited' : data.message === 'bad credentials' ? 'failed' : 'other';
}

let accounts = 0;
const newAccount = (): string => `ws${++accounts}`;

describe.each<Platform>(['socket.io', 'ws'])('counting by outcome in WebSocket gateways on %s', (platform) => {
  let t: WsApp;
  beforeAll(async () => {
    t = await createWsApp(platform, {}, { gateways: [LoginGateway] });
  });
  afterAll(() => t.close());

  const remaining = async (account: string): Promise<number> => {
    await t.app.get(RateLimiter).refundsSettled();
    return (await t.app.get(RateLimitService).peek('login', `account:${account}`)).remaining;
  };

  it("'failed': 200 failed logins sent at once at 5 per account are charged exactly 5 times", async () => {
    const account = newAccount();
    const client = await t.connect();
    for (let i = 0; i < 200; i++) client.send('login', { account, password: 'wrong' });
    const answers = (await client.waitFor(200)).map(outcomeOf);
    expect(answers.filter((o) => o === 'failed')).toHaveLength(5);
    expect(answers.filter((o) => o === 'limited')).toHaveLength(195);
    expect(await remaining(account)).toBe(0);
    expect(outcomeOf(await ask(client, 'login', { account, password: 'right' }))).toBe('limited');
  });

  it("'failed': a handler's exception counts, a handled message is given back", async () => {
    const account = newAccount();
    const client = await t.connect();
    const answers: string[] = [];
    for (const password of ['wrong', 'right', 'wrong', 'wrong', 'wrong', 'right', 'wrong']) {
      answers.push(outcomeOf(await ask(client, 'login', { account, password })));
      await t.app.get(RateLimiter).refundsSettled();
    }
    expect(answers).toEqual(['failed', 'ok', 'failed', 'failed', 'failed', 'ok', 'failed']);
    expect(await remaining(account)).toBe(0);
    expect(outcomeOf(await ask(client, 'login', { account, password: 'right' }))).toBe('limited');
  });
});
