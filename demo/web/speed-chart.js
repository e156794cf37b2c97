// The speed page's bar chart: one bar per result row, grouped by model, length = GFLOP/s (comparable across models,
// unlike milliseconds), labelled with the median. Plain canvas 2D, drawn at the device's pixel ratio.

const COLORS = { native: "#1a237e", relaxed: "#3949ab", simd: "#7986cb", scalar: "#c5cae9" };
const BAR = 18, GAP = 4, GROUP_GAP = 14, LEFT = 140, RIGHT = 110, TOP = 24;

export function drawChart(canvas, rows) {
  const models = [...new Set(rows.map((r) => r.model))];
  const height = TOP + models.length * GROUP_GAP + rows.length * (BAR + GAP) + 10;
  const width = canvas.clientWidth || 720;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = "12px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  ctx.fillStyle = "#666";
  ctx.fillText("GFLOP/s (longer is faster), median ms at the end of each bar", 8, 12);
  if (!rows.length) return;
  const max = Math.max(...rows.map((r) => r.gflops));
  const scale = (width - LEFT - RIGHT) / max;
  let y = TOP;
  for (const model of models) {
    y += GROUP_GAP / 2;
    ctx.fillStyle = "#222";
    ctx.font = "bold 12px system-ui, sans-serif";
    ctx.fillText(model, 8, y);
    ctx.font = "12px system-ui, sans-serif";
    y += GROUP_GAP / 2;
    for (const r of rows.filter((x) => x.model === model)) {
      ctx.fillStyle = "#444";
      ctx.fillText(r.short ?? r.label, 16, y + BAR / 2);
      ctx.fillStyle = COLORS[r.variant] ?? "#999";
      const w = Math.max(1, r.gflops * scale);
      ctx.fillRect(LEFT, y, w, BAR);
      ctx.fillStyle = "#222";
      ctx.fillText(`${r.gflops.toFixed(1)} · ${r.median.toFixed(2)} ms`, LEFT + w + 6, y + BAR / 2);
      y += BAR + GAP;
    }
  }
}
