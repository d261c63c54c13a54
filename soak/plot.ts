// The plot of a soak: RSS and heap (top) and records written per second per stream (bottom) over
// the run, drawn as an SVG here and turned into a PNG by Debian's Chromium through playwright-core
// (as the UI tests do; no charting dependency).
import { writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import type { Sample } from './sample.js';

const W = 1000;
const PANEL = 240;
const M = { left: 70, right: 170, top: 40, gap: 60 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

interface Line {
  label: string;
  values: number[];
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** One panel: lines over the samples' times, y from 0 to the largest value (rounded up). */
function panel(top: number, title: string, unit: string, t: number[], tMax: number, lines: Line[], refT?: number): string {
  const plotW = W - M.left - M.right;
  const yMax = niceCeil(Math.max(1, ...lines.flatMap((l) => l.values.filter(Number.isFinite))));
  const x = (v: number) => M.left + (v / tMax) * plotW;
  const y = (v: number) => top + PANEL - (v / yMax) * PANEL;
  const out = [`<text x="${M.left}" y="${top - 12}" font-size="15" font-weight="bold">${esc(title)}</text>`];
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    out.push(
      `<line x1="${M.left}" x2="${M.left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${M.left - 8}" y="${y(v) + 4}" font-size="11" text-anchor="end">${fmt(v)}</text>`,
    );
  }
  const step = [0.25, 0.5, 1, 2, 5, 10, 15, 30, 60].find((m) => tMax / 60 / m <= 8) ?? 120;
  for (let m = 0; m * 60 <= tMax; m += step) {
    out.push(`<text x="${x(m * 60)}" y="${top + PANEL + 16}" font-size="11" text-anchor="middle">${m}</text>`);
  }
  out.push(`<text x="${M.left + plotW / 2}" y="${top + PANEL + 32}" font-size="11" text-anchor="middle">minutes</text>`);
  out.push(`<text x="${18}" y="${top + PANEL / 2}" font-size="11" transform="rotate(-90 18 ${top + PANEL / 2})" text-anchor="middle">${esc(unit)}</text>`);
  out.push(`<rect x="${M.left}" y="${top}" width="${plotW}" height="${PANEL}" fill="none" stroke="#888"/>`);
  if (refT !== undefined && refT <= tMax) {
    out.push(
      `<line x1="${x(refT)}" x2="${x(refT)}" y1="${top}" y2="${top + PANEL}" stroke="#999" stroke-dasharray="5,4"/>`,
      `<text x="${x(refT) + 4}" y="${top + 14}" font-size="11" fill="#666">flat from here</text>`,
    );
  }
  lines.forEach((l, k) => {
    const pts = l.values.map((v, i) => (Number.isFinite(v) ? `${x(t[i]!).toFixed(1)},${y(v).toFixed(1)}` : '')).filter(Boolean);
    const c = COLORS[k % COLORS.length]!;
    out.push(`<polyline fill="none" stroke="${c}" stroke-width="1.8" points="${pts.join(' ')}"/>`);
    out.push(
      `<rect x="${W - M.right + 14}" y="${top + 10 + k * 20}" width="14" height="3" fill="${c}"/>`,
      `<text x="${W - M.right + 34}" y="${top + 15 + k * 20}" font-size="12">${esc(l.label)}</text>`,
    );
  });
  return out.join('\n');
}

function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

const fmt = (v: number) => (v >= 1000 ? `${Math.round(v / 100) / 10}k` : String(Math.round(v * 10) / 10));

/** The load's samples (the drain sample is left out: nothing is sent then); a dashed line at `refT`, where flatness is measured from. */
export function soakSvg(all: Sample[], refT: number, title: string): string {
  const samples = all.filter((s) => s.phase !== 'drain');
  const t = samples.map((s) => s.t);
  const tMax = Math.max(60, ...t);
  const pipelines = [...new Set(samples.flatMap((s) => Object.keys(s.out_per_sec)))].sort();
  const height = M.top + 2 * PANEL + M.gap + 60;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${W / 2}" y="20" font-size="14" text-anchor="middle">${esc(title)}</text>`,
    panel(
      M.top + 20,
      'Daemon memory',
      'MB',
      t,
      tMax,
      [
        { label: 'RSS', values: samples.map((s) => s.proc_rss_mb) },
        { label: 'heap total', values: samples.map((s) => s.heap_total_mb) },
        { label: 'heap used', values: samples.map((s) => s.heap_used_mb) },
      ],
      refT,
    ),
    panel(
      M.top + 20 + PANEL + M.gap,
      'Throughput (records written)',
      'records/s',
      t,
      tMax,
      pipelines.map((p) => ({ label: p, values: samples.map((s) => s.out_per_sec[p] ?? NaN) })),
    ),
    '</svg>',
  ].join('\n');
}

/** Writes `svg` beside the PNG Chromium renders of it. */
export async function writePlot(svg: string, svgPath: string, pngPath: string) {
  writeFileSync(svgPath, svg);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: W, height: 700 } });
    await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
    await page.locator('svg').screenshot({ path: pngPath });
  } finally {
    await browser.close();
  }
}
