import type { ChartData } from '../../packages/simulator/src/svg.js';

export interface DrawnBucket {
  startMs: number;
  endMs: number;
  admitted: number;
  denied: number;
}
export interface DrawnPanel {
  algorithm: string;
  admitted: number;
  denied: number;
  buckets: DrawnBucket[];
}

/** What an SVG chart of the simulator drew, read back from its data-* attributes and its <metadata> JSON only. */
export function readChart(svg: string): { panels: DrawnPanel[]; metadata: ChartData | ChartData[] } {
  const attr = (tag: string, name: string) => Number(new RegExp(`${name}="(-?\\d+)"`).exec(tag)?.[1]);
  const panels = svg
    .split('<g class="panel"')
    .slice(1)
    .map((chunk): DrawnPanel => {
      const head = chunk.slice(0, chunk.indexOf('>'));
      const buckets = [...chunk.matchAll(/<g class="bucket"[^>]*>/g)].map(([tag]) => ({
        startMs: attr(tag, 'data-start-ms'),
        endMs: attr(tag, 'data-end-ms'),
        admitted: attr(tag, 'data-admitted'),
        denied: attr(tag, 'data-denied'),
      }));
      return {
        algorithm: /data-algorithm="([^"]+)"/.exec(head)?.[1] ?? '',
        admitted: attr(head, 'data-admitted'),
        denied: attr(head, 'data-denied'),
        buckets,
      };
    });
  const json = /<metadata id="simulation">(.*?)<\/metadata>/s.exec(svg)?.[1];
  if (json === undefined) throw new Error('the SVG has no <metadata id="simulation">');
  return { panels, metadata: JSON.parse(json) };
}
