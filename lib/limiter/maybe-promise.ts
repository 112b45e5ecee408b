/** A value, or a Promise of it: what a function of the request path returns when only some calls wait. */
export type MaybePromise<T> = T | Promise<T>;

/** Whether a value is a Promise (a thenable): the request path awaits only those. */
export const isPromise = <T>(value: MaybePromise<T> | unknown): value is Promise<T> =>
  typeof (value as { then?: unknown } | null)?.then === 'function';
