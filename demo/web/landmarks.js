// Face landmarks: the rotated square face crop the landmark model expects (docs/dev/face-pipeline.md),
// and the way back from crop pixels to image pixels.

/**
 * ROI from a detection in image pixels: centre = box centre, rotation from the eyes (keypoints 0 and 1),
 * side = 1.5 x the larger box side.
 */
export function roiFromFace(face) {
  const [[x0, y0], [x1, y1]] = face.keypoints; // right eye, left eye (image pixels)
  const angle = -Math.atan2(-(y1 - y0), x1 - x0);
  return {
    cx: (face.x0 + face.x1) / 2,
    cy: (face.y0 + face.y1) / 2,
    side: 1.5 * Math.max(face.x1 - face.x0, face.y1 - face.y0),
    angle,
  };
}

// crop pixel (u, v) in [0, size) -> image pixel
function mapper(roi, size) {
  const cos = Math.cos(roi.angle), sin = Math.sin(roi.angle), s = roi.side / size;
  return (u, v) => {
    const dx = (u - size / 2) * s, dy = (v - size / 2) * s;
    return [roi.cx + dx * cos - dy * sin, roi.cy + dx * sin + dy * cos];
  };
}

/** Bilinear sample of the rotated ROI into a size x size RGBA image (outside the image: black). */
export function cropRotated(pixels, roi, size) {
  const { data, width: W, height: H } = pixels;
  const C = pixels.channels ?? 4;
  const out = new Uint8ClampedArray(size * size * 4);
  const map = mapper(roi, size);
  const px = (x, y, c) => (x < 0 || y < 0 || x >= W || y >= H ? 0 : data[(y * W + x) * C + c]);
  for (let v = 0; v < size; v++) {
    for (let u = 0; u < size; u++) {
      const [sx, sy] = map(u + 0.5, v + 0.5);
      const x = sx - 0.5, y = sy - 0.5, x0 = Math.floor(x), y0 = Math.floor(y), fx = x - x0, fy = y - y0;
      const o = (v * size + u) * 4;
      for (let c = 0; c < 3; c++) {
        const top = px(x0, y0, c) + (px(x0 + 1, y0, c) - px(x0, y0, c)) * fx;
        const bot = px(x0, y0 + 1, c) + (px(x0 + 1, y0 + 1, c) - px(x0, y0 + 1, c)) * fx;
        out[o + c] = top + (bot - top) * fy;
      }
      out[o + 3] = 255;
    }
  }
  return { data: out, width: size, height: size, channels: 4 };
}

/** 468 x (x, y, z) in crop pixels -> [[x, y]] in image pixels. */
export function landmarksToImage(values, roi, size) {
  const map = mapper(roi, size);
  const pts = [];
  for (let i = 0; i + 2 < values.length; i += 3) pts.push(map(values[i], values[i + 1]));
  return pts;
}

// A few contours to draw instead of 468 bare dots (indices of MediaPipe's face mesh).
export const LIPS_OUTER = [61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 409, 270, 269, 267, 0, 37, 39, 40, 185];
export const LIPS_INNER = [78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308, 415, 310, 311, 312, 13, 82, 81, 80, 191];
