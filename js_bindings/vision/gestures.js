// A small gesture set read from one hand's landmarks: a port of python_ref/vision/gestures.py (its docstring states
// the rules); every number comes from the generated constants.js.

import { DIRECTION_COS, FINGER_EXTENDED, FINGERS, THUMB, THUMB_EXTENDED } from "./constants.js";

/** {thumb, index, middle, ring, pinky} -> extended, from world landmarks (21*3 numbers, metres). */
export function fingerStates(world) {
  const d = (a, b) => { // as numpy.linalg.norm: sqrt of the sum of squares
    const x = world[3 * a] - world[3 * b], y = world[3 * a + 1] - world[3 * b + 1], z = world[3 * a + 2] - world[3 * b + 2];
    return Math.sqrt(x * x + y * y + z * z);
  };
  const out = { thumb: d(THUMB.tip, THUMB.palm) > THUMB_EXTENDED * d(THUMB.mcp, THUMB.palm) };
  for (const [name, [, pip, tip]] of Object.entries(FINGERS)) out[name] = d(tip, 0) > FINGER_EXTENDED * d(pip, 0);
  return out;
}

/** "up", "down" or null for the image vector a -> b (landmarks: 21*3 numbers, y down). */
export function direction(lm, a, b) {
  const vx = lm[3 * b] - lm[3 * a], vy = lm[3 * b + 1] - lm[3 * a + 1];
  const n = Math.hypot(vx, vy);
  if (n === 0) return null;
  if (-vy > DIRECTION_COS * n) return "up";
  if (vy > DIRECTION_COS * n) return "down";
  return null;
}

/** The gesture name (constants.js GESTURES) or null. */
export function gesture(landmarks, world) {
  const s = fingerStates(world);
  const four = [s.index, s.middle, s.ring, s.pinky];
  const is = (...want) => want.every((v, i) => four[i] === v);
  if (!four.some(Boolean)) {
    if (s.thumb) {
      const way = direction(landmarks, THUMB.mcp, THUMB.tip);
      if (way !== null) return `thumb_${way}`;
    }
    return "closed_fist";
  }
  if (four.every(Boolean) && s.thumb) return "open_palm";
  if (is(true, true, false, false)) return "victory";
  if (is(true, false, false, false) && direction(landmarks, FINGERS.index[0], FINGERS.index[2]) === "up") {
    return "pointing_up";
  }
  return null;
}
