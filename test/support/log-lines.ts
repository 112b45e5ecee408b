import type { LoggerService } from '@nestjs/common';

/** A Nest logger that keeps each line as `<level> <message>`, for tests that read what the module logs. */
export class LogLines implements LoggerService {
  readonly lines: string[] = [];
  log = (m: unknown) => this.lines.push(`log ${String(m)}`);
  warn = (m: unknown) => this.lines.push(`warn ${String(m)}`);
  error = (m: unknown) => this.lines.push(`error ${String(m)}`);
}
