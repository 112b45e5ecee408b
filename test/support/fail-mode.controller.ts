import { Controller, Get } from '@nestjs/common';

import { RateLimit } from '../../lib/index.js';

/** Two routes keyed by IP for the outage tests: GET /open fails open, GET /closed (5 per minute) fails closed. */
@Controller()
export class FailModeController {
  @Get('open')
  @RateLimit({ name: 'open', algorithm: 'gcra', limit: 1000, window: '1m', key: 'ip', failMode: 'open' })
  open() {
    return 'ok';
  }

  @Get('closed')
  @RateLimit({ name: 'closed', algorithm: 'sliding-window-log', limit: 5, window: '1m', key: 'ip', failMode: 'closed' })
  closed() {
    return 'ok';
  }
}
