import {
  BadRequestException,
  Controller,
  type ExecutionContext,
  Get,
  Injectable,
  type PipeTransform,
  Query,
  UseGuards,
} from '@nestjs/common';

import { Criticality, RateLimit } from '../lib/index.js';
import { ApiKeyGuard, type AuthUser, CurrentUser } from './api-key.guard.js';

/** Rows exported when `rows` is absent. */
export const DEFAULT_ROWS = 100;
/** Most rows one export may ask for: the bucket's capacity, since a larger export could never be admitted. */
export const MAX_ROWS = 50_000;

/** `rows` as an integer from 0 to MAX_ROWS (DEFAULT_ROWS when absent), or undefined when it is anything else. */
export function parseRows(raw: unknown): number | undefined {
  if (raw === undefined) return DEFAULT_ROWS;
  if (typeof raw !== 'string' || !/^\d{1,6}$/.test(raw)) return undefined; // also rejects ?rows=1&rows=2
  const rows = Number(raw);
  return rows <= MAX_ROWS ? rows : undefined;
}

/** Answers 400 for a bad `rows`; the handler receives a number. */
@Injectable()
export class RowsPipe implements PipeTransform<unknown, number> {
  transform(raw: unknown): number {
    const rows = parseRows(raw);
    if (rows === undefined) {
      throw new BadRequestException(`rows must be an integer from 0 to ${MAX_ROWS} (default ${DEFAULT_ROWS})`);
    }
    return rows;
  }
}

/**
 * The cost of an export: its rows. The limiter calls this before pipes run, and treats a cost function that
 * throws or returns a non-integer as a failure of the limiter itself (logged as a store failure, reported to
 * `onError`, and a 503 for a fail-closed policy). So a bad `rows` costs 0 here and RowsPipe answers 400:
 * nothing is exported, so nothing is charged.
 */
function exportCost(ctx: ExecutionContext): number {
  return parseRows(ctx.switchToHttp().getRequest<{ query?: Record<string, unknown> }>().query?.rows) ?? 0;
}

@Controller('reports')
@UseGuards(ApiKeyGuard)
export class ReportsController {
  /** 50,000 rows per hour per user, all at once if need be; one request is charged as many units as rows. */
  @Get('export')
  @Criticality('sheddable') // a report can wait a minute; a login cannot
  @RateLimit({ name: 'export-rows', algorithm: 'token-bucket', limit: 50_000, window: '1h', cost: exportCost })
  export(
    @CurrentUser() user: AuthUser,
    @Query('rows', RowsPipe) rows: number,
  ): { user: string; rows: number; file: string } {
    return { user: user.id, rows, file: `report-${user.id}-${rows}.csv` };
  }
}
