/** A class's or a method's name, or `fallback` for an anonymous one. */
export const nameOf = (target: unknown, fallback: string): string => {
  const name = (target as { name?: unknown } | null | undefined)?.name;
  return typeof name === 'string' && name !== '' ? name : fallback;
};

/**
 * `Class.method`: how start-up errors, warnings and log lines name a handler. `owner` says what the class is
 * when it has no name ('controller', 'resolver'); `method` names the handler when its function is not at hand.
 * @example handlerLabel(BooksController, BooksController.prototype.list) === 'BooksController.list'
 */
export function handlerLabel(classRef: unknown, handler: unknown, owner = 'controller', method?: string): string {
  return `${nameOf(classRef, owner)}.${method ?? nameOf(handler, 'handler')}`;
}
