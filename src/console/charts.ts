// Small inline SVG charts drawn from numbers only (no text from the database reaches the markup except
// through escapeHtml), so they can be embedded as trusted Html.
import { escapeHtml, trusted, type Html } from './html.ts';

export interface ChartPoint { at: Date; value: number }

/** A filled line chart with its latest value and maximum as labels. */
export function lineChart(title: string, points: ChartPoint[], opts: { unit?: string; width?: number; height?: number; kind?: 'line' | 'bars' } = {}): Html {
  const w = opts.width ?? 320, h = opts.height ?? 80, pad = 2;
  const unit = opts.unit ?? '';
  const max = Math.max(1, ...points.map((p) => p.value));
  const last = points.length ? points[points.length - 1]!.value : null;
  const x = (i: number) => points.length <= 1 ? w / 2 : pad + (i * (w - 2 * pad)) / (points.length - 1);
  const y = (v: number) => h - pad - (v / max) * (h - 2 * pad);
  let body = '';
  if (!points.length) {
    body = `<text x="${w / 2}" y="${h / 2}" text-anchor="middle" class="empty">no data yet</text>`;
  } else if (opts.kind === 'bars') {
    const bw = Math.max(1, (w - 2 * pad) / points.length - 1);
    body = points.map((p, i) => {
      const top = y(p.value);
      return `<rect x="${(pad + (i * (w - 2 * pad)) / points.length).toFixed(1)}" y="${top.toFixed(1)}" width="${bw.toFixed(1)}" height="${(h - pad - top).toFixed(1)}"><title>${escapeHtml(p.at.toISOString())}: ${p.value}${escapeHtml(unit)}</title></rect>`;
    }).join('');
  } else {
    const line = points.map((p, i) => `${x(i).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ');
    body = `<polygon class="area" points="${x(0).toFixed(1)},${h - pad} ${line} ${x(points.length - 1).toFixed(1)},${h - pad}"/>` +
      `<polyline points="${line}"/>`;
  }
  const hhmm = (d: Date) => d.toISOString().slice(11, 16);
  const span = points.length > 1 ? ` ${hhmm(points[0]!.at)}-${hhmm(points[points.length - 1]!.at)} UTC` : '';
  const caption = `${escapeHtml(title)}: ${last === null ? 'n/a' : `${last}${escapeHtml(unit)}`} (max ${max}${escapeHtml(unit)}${span})`;
  return trusted(`<figure class="chart"><svg viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="${caption}">${body}</svg><figcaption>${caption}</figcaption></figure>`);
}
