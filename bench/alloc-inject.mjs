// The child side of bench/alloc-probe.mjs (bench/app.mjs with BENCH_ALLOC set): the bytes the app allocates per
// request, read as the heap's growth over the measured requests while no garbage collection runs. Needs
// `node --expose-gc` and a young generation larger than what the measured requests allocate
// (--min-semi-space-size / --max-semi-space-size), so that nothing is collected and the growth is every byte
// allocated, kept or not.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import v8 from 'node:v8';

import { injectBatch } from './inject.mjs';

const settle = () => new Promise((resolve) => setTimeout(resolve, 100));
const newSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');

/**
 * `spec` is "<requests>,<warmUp>,<inFlight>,<users>": `warmUp` requests (every user's key exists afterwards when
 * warmUp ≥ users), a full collection, then `requests` measured. Resolves to the heap growth per request and the
 * collections that ran while the measured requests did (there must be none for the growth to mean anything).
 */
export async function measureAllocation(app, spec) {
  if (typeof globalThis.gc !== 'function') throw new Error('measureAllocation needs node --expose-gc');
  const handler = (req, res) => app(req, res);
  const [requests, warmUp, inFlight, users] = spec.split(',').map(Number);
  await injectBatch(handler, { count: warmUp, offset: 0, inFlight, users });
  await settle();
  globalThis.gc();
  const collections = [];
  const observer = new PerformanceObserver((list) => collections.push(...list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });

  // BENCH_HEAP_PROFILE: V8's sampling heap profile of the measured requests, to that file (what allocates; its
  // own bookkeeping allocates too, so the bytes per request of such a run are not reported as they are)
  const profiler = process.env.BENCH_HEAP_PROFILE === undefined ? undefined : new Session();
  if (profiler !== undefined) {
    profiler.connect();
    await profiler.post('HeapProfiler.startSampling', {
      samplingInterval: 512,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }
  const youngBefore = newSpace();
  const before = v8.getHeapStatistics();
  const externalBefore = process.memoryUsage().arrayBuffers;
  const started = performance.now();
  const failed = await injectBatch(handler, { count: requests, offset: warmUp, inFlight, users });
  const ended = performance.now();
  const after = v8.getHeapStatistics();
  const externalAfter = process.memoryUsage().arrayBuffers;
  const youngAfter = newSpace();

  if (profiler !== undefined) {
    const { profile } = await profiler.post('HeapProfiler.stopSampling');
    writeFileSync(process.env.BENCH_HEAP_PROFILE, JSON.stringify(profile));
    profiler.disconnect();
  }
  await settle(); // gc entries are delivered on a later turn of the event loop
  observer.disconnect();
  const during = collections.filter((e) => e.startTime + e.duration >= started && e.startTime <= ended);
  return {
    requests,
    failed,
    bytesPerRequest: (after.used_heap_size - before.used_heap_size) / requests,
    youngBytesPerRequest: (youngAfter.space_used_size - youngBefore.space_used_size) / requests,
    arrayBufferBytesPerRequest: (externalAfter - externalBefore) / requests,
    youngLeft: youngAfter.space_available_size,
    collections: during.map((e) => ({ kind: e.detail?.kind, ms: e.duration })),
    // a scavenge empties the young generation: if it shrank, something was collected, observed or not
    youngShrank: youngAfter.space_used_size < youngBefore.space_used_size,
  };
}
