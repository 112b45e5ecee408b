/**
 * A seeded source of numbers in [0, 1) (mulberry32): the same seed, the same fleet run. The simulator never
 * reads Math.random, so a run is replayed from its seed.
 * @example const next = seeded(1); next() // 0.627… every time
 */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
