/** ceil(a / b) for integers a >= 0, b > 0, without leaving integer arithmetic. */
export function ceilDiv(a: number, b: number): number {
  const q = Math.floor(a / b);
  return q * b < a ? q + 1 : q;
}
