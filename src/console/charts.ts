// Server-rendered SVG time charts: time on the x-axis with labels in UTC, a value axis starting at 0, and
// each point's time and value in an SVG <title> (shown on hover). Only numbers and our own labels reach the
// markup, and every label goes through escapeHtml, so the chart can be embedded as trusted Html.
import { escapeHtml, trusted, type Html } from './html.ts';
import type { Point, Window } from './series.ts';

const W = 620,
  H = 190,
  LEFT = 48,
  RIGHT = 12,
  TOP = 12,
  BOTTOM = 28;

/** A round step for an axis that must reach `max` in about `ticks` steps. */
function niceStep(max: number, ticks: number): number {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
}

const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(1));
/** Axis labels with as many decimals as the step needs (0.25 stays 0.25, not 0.3). */
const decimals = (step: number) => [0, 1, 2, 3].find((d) => Number.isInteger(Math.round(step * 10 ** d * 1e6) / 1e6)) ?? 3;
const axisFmt = (v: number, step: number) => v.toFixed(decimals(step));
const pad2 = (n: number) => String(n).padStart(2, '0');
/** Hours and minutes for ranges up to a day, day and hour beyond. */
function timeLabel(d: Date, w: Window): string {
  const hm = `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}`;
  return w.end.getTime() - w.start.getTime() > 86_400_000 ? `${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ${hm}` : hm;
}

export interface ChartOptions {
  unit?: string;
  kind?: 'bars' | 'line' | 'dots';
  id?: string;
}

export function timeChart(title: string, points: Point[], w: Window, opts: ChartOptions = {}): Html {
  const unit = opts.unit ?? '';
  const kind = opts.kind ?? 'line';
  const t0 = w.start.getTime(),
    t1 = w.end.getTime();
  const plotW = W - LEFT - RIGHT,
    plotH = H - TOP - BOTTOM;
  const rawMax = Math.max(0, ...points.map((p) => p.value));
  const step = niceStep(Math.max(rawMax, 1), 4);
  const max = Math.ceil(Math.max(rawMax, 1) / step) * step;
  const x = (t: number) => LEFT + ((t - t0) / (t1 - t0)) * plotW;
  const y = (v: number) => TOP + plotH - (v / max) * plotH;
  const tip = (p: Point) =>
    `<title>${escapeHtml(`${p.at.toISOString().slice(0, 16).replace('T', ' ')} UTC: ${fmt(p.value)}${unit}`)}</title>`;

  const parts: string[] = [];
  for (let v = 0; v <= max + step / 2; v += step) {
    parts.push(
      `<line class="grid" x1="${LEFT}" x2="${W - RIGHT}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/>`,
      `<text class="axis" x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${escapeHtml(axisFmt(v, step) + unit)}</text>`,
    );
  }
  const ticks = 6;
  for (let i = 0; i <= ticks; i++) {
    const t = t0 + ((t1 - t0) * i) / ticks;
    parts.push(
      `<line class="tick" x1="${x(t).toFixed(1)}" x2="${x(t).toFixed(1)}" y1="${TOP + plotH}" y2="${TOP + plotH + 4}"/>`,
      `<text class="axis" x="${x(t).toFixed(1)}" y="${H - 8}" text-anchor="${i === 0 ? 'start' : i === ticks ? 'end' : 'middle'}">${escapeHtml(timeLabel(new Date(t), w))}</text>`,
    );
  }
  const stepMs = w.stepMinutes * 60_000;
  if (!points.length || rawMax === 0) {
    // Said in words: a flat line at zero reads like a broken chart.
    parts.push(
      `<text class="empty" x="${LEFT + plotW / 2}" y="${TOP + plotH / 2}" text-anchor="middle">${points.length ? 'zero all through this range' : 'no data in this range'}</text>`,
    );
  }
  if (kind === 'bars') {
    const bw = Math.max(1, (stepMs / (t1 - t0)) * plotW - 1);
    for (const p of points) {
      const top = y(p.value);
      parts.push(
        `<rect x="${x(p.at.getTime()).toFixed(1)}" y="${top.toFixed(1)}" width="${bw.toFixed(1)}" height="${Math.max(0, TOP + plotH - top).toFixed(1)}">${tip(p)}</rect>`,
      );
    }
  } else {
    const mid = (p: Point) => x(p.at.getTime() + (kind === 'line' ? stepMs / 2 : 0));
    if (kind === 'line' && points.length > 1)
      parts.push(`<polyline points="${points.map((p) => `${mid(p).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ')}"/>`);
    for (const p of points)
      parts.push(`<circle cx="${mid(p).toFixed(1)}" cy="${y(p.value).toFixed(1)}" r="${kind === 'dots' ? 4 : 2.5}">${tip(p)}</circle>`);
  }
  parts.push(`<line class="axis" x1="${LEFT}" x2="${W - RIGHT}" y1="${TOP + plotH}" y2="${TOP + plotH}"/>`);
  const last = points.length ? points[points.length - 1]! : null;
  const caption = `${title}: ${last ? `latest ${fmt(last.value)}${unit}` : 'no data'}, highest ${fmt(rawMax)}${unit}`;
  return trusted(
    `<figure class="chart"${opts.id ? ` id="${escapeHtml(opts.id)}"` : ''}><figcaption>${escapeHtml(title)}</figcaption>` +
      `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${escapeHtml(caption)}">${parts.join('')}</svg>` +
      `<p class="chart-summary">${escapeHtml(last ? `Latest ${fmt(last.value)}${unit} at ${timeLabel(last.at, w)} UTC; highest ${fmt(rawMax)}${unit}.` : 'No data in this range.')}</p></figure>`,
  );
}
