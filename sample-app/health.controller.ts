import { Controller, Get } from '@nestjs/common';

import { SkipRateLimit } from '../lib/index.js';

@Controller('health')
export class HealthController {
  /** Probes of load balancers and orchestrators must never be limited (nor send rate-limit headers). */
  @Get()
  @SkipRateLimit()
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }
}
