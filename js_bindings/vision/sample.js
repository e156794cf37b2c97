// A rotated rectangle of an image sampled into a model input as MediaPipe's ImageToTensorCalculator does on the CPU
// (OpenCV warpPerspective, INTER_LINEAR, 8-bit): a port of python_ref/vision/sample.py (its docstring defines every
// rule). Integer arithmetic, so JS and Python agree bit for bit.

/** Round half to even (OpenCV's cvRound), as numpy.rint. */
function rint(x) {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * pixels: {data, width, height, channels?}; the rectangle: centre (cx, cy), size w x h, angle (radians);
 * out: Uint8Array(nW * nH * 3) receiving RGB; border: "replicate" or "zero".
 */
export function sampleRect(pixels, cx, cy, w, h, angle, nW, nH, border = "replicate", out = new Uint8Array(nW * nH * 3)) {
  const { data, width: W, height: H } = pixels;
  const C = pixels.channels ?? 4;
  const c = Math.cos(angle), s = Math.sin(angle);
  const zero = border === "zero";
  let o = 0;
  for (let i = 0; i < nH; i++) {
    const v = (i / nH - 0.5) * h;
    for (let j = 0; j < nW; j++) {
      const u = (j / nW - 0.5) * w;
      const xq = rint((cx + u * c - v * s) * 32), yq = rint((cy + u * s + v * c) * 32);
      const x0 = Math.floor(xq / 32), y0 = Math.floor(yq / 32), fx = xq - 32 * x0, fy = yq - 32 * y0;
      const taps = [[y0, x0, (32 - fx) * (32 - fy)], [y0, x0 + 1, fx * (32 - fy)], [y0 + 1, x0, (32 - fx) * fy],
        [y0 + 1, x0 + 1, fx * fy]];
      for (let k = 0; k < 3; k++) {
        let acc = 0;
        for (const [r, col, wt] of taps) {
          if (zero && (r < 0 || r >= H || col < 0 || col >= W)) continue;
          const rr = r < 0 ? 0 : r >= H ? H - 1 : r, cc = col < 0 ? 0 : col >= W ? W - 1 : col;
          acc += data[(rr * W + cc) * C + k] * wt * 32;
        }
        const val = Math.floor((acc + 16384) / 32768);
        out[o++] = val < 0 ? 0 : val > 255 ? 255 : val;
      }
    }
  }
  return out;
}
