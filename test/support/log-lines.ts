import { Logger, type LoggerService } from '@nestjs/common';

/** One line a logger was given. */
export interface LogEntry {
  readonly level: 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
  readonly message: string;
  /** The logger's context (the last argument Nest's Logger passes): 'RateLimit' for the module's lines. */
  readonly context: unknown;
}

/**
 * A Nest logger (and a logger of the module's own parts, lib/util/logger.ts) that keeps every line, for tests that
 * read or count what the module (and Nest) logged: as entries, as `<level> <message>` lines, or the warnings.
 * @example const logger = new CapturingLogger(); ... expect(logger.find('warn', /trustProxy/)).toHaveLength(1);
 */
export class CapturingLogger implements LoggerService {
  readonly entries: LogEntry[] = [];

  /** Every line as `<level> <message>`. */
  get lines(): string[] {
    return this.entries.map((e) => `${e.level} ${e.message}`);
  }

  /** The messages of the warnings. */
  get warnings(): string[] {
    return this.entries.filter((e) => e.level === 'warn').map((e) => e.message);
  }

  /** Lines at `level` whose message matches. */
  find(level: LogEntry['level'], pattern: RegExp): LogEntry[] {
    return this.entries.filter((e) => e.level === level && pattern.test(e.message));
  }

  // Bound, so that a method handed on by itself still records here.
  readonly log = (message: unknown, ...rest: unknown[]): void => this.add('log', message, rest);
  readonly error = (message: unknown, ...rest: unknown[]): void => this.add('error', message, rest);
  readonly warn = (message: unknown, ...rest: unknown[]): void => this.add('warn', message, rest);
  readonly debug = (message: unknown, ...rest: unknown[]): void => this.add('debug', message, rest);
  readonly verbose = (message: unknown, ...rest: unknown[]): void => this.add('verbose', message, rest);
  readonly fatal = (message: unknown, ...rest: unknown[]): void => this.add('fatal', message, rest);

  private add(level: LogEntry['level'], message: unknown, rest: unknown[]): void {
    this.entries.push({ level, message: String(message), context: rest[rest.length - 1] });
  }
}

/**
 * Nest's Logger with the module's context ('RateLimit'), keeping its lines in a CapturingLogger: for the parts
 * typed with Nest's Logger class (the context adapters' settings).
 */
export class CapturingNestLogger extends Logger {
  readonly capture = new CapturingLogger();

  constructor() {
    super('RateLimit');
  }

  /** The messages of the warnings. */
  get warnings(): string[] {
    return this.capture.warnings;
  }

  override log(message: unknown): void {
    this.capture.log(message, this.context);
  }
  override warn(message: unknown): void {
    this.capture.warn(message, this.context);
  }
  override error(message: unknown): void {
    this.capture.error(message, this.context);
  }
}
