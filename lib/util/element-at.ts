/**
 * Element `index` of an array whose length the code itself made right: built in lock-step with another, or
 * a store's reply to the items it was sent. A missing element is a bug, and deciding on nothing could admit
 * a request that should be denied, so it throws (a RangeError: a defect, never an outage), naming `what` was short. Only for arrays whose elements are
 * never undefined.
 * @example elementAt(decisions, i, 'the reply to consume')
 */
export function elementAt<T>(array: readonly T[], index: number, what: string): T {
  const element = array[index];
  if (element === undefined) {
    throw new RangeError(`nest-rate-limit: ${what} has no element ${index} (it has ${array.length})`);
  }
  return element;
}
