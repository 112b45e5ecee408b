/**
 * What the module's parts below Nest (the engine, the stores' change feeds) need of a logger; Nest's `Logger`
 * is one, and so is any object with these methods.
 */
export interface Logger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}
