import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';

import { RateLimit } from '../lib/index.js';

/**
 * A WebSocket chat (socket.io, on the app's port): each `chat` message is one decision. A client may send 5
 * messages at once and then one every 2 seconds; a message over the limit is not handled, and the client gets
 * Nest's `exception` event with `{ status: 'error', code: 'RATE_LIMITED', message, policy, retryAfter }`.
 */
@WebSocketGateway()
export class ChatGateway {
  @SubscribeMessage('chat')
  @RateLimit({ name: 'chat', algorithm: 'gcra', limit: 30, window: '1m', burst: 5, key: 'ip' })
  chat(@MessageBody() text: string): { event: string; data: string } {
    return { event: 'chat', data: String(text).slice(0, 500) };
  }
}
