// The hands page: MediaPipe Hands' pipeline (wasmrt.vision.HandTracker, the package's lite models) in a Worker or on
// the page; the page draws the skeleton on the hand and lists handedness and gesture. Tests drive it through
// window.visionPage (tests/test_vision_pages.py).
import { HAND_CONNECTIONS } from "../../js_bindings/vision/index.js";
import { $, startPage } from "./vision-page.js";

export const SKELETON = { line: "#00e676", joint: "#ff1744", width: 3, radius: 3.5 };

/** The frame, then each hand's bones and joints on it. */
function draw(ctx, img, r) {
  ctx.putImageData(img, 0, 0);
  ctx.lineWidth = SKELETON.width;
  ctx.lineCap = "round";
  for (const h of r.hands) {
    const p = (i) => [h.landmarks[3 * i], h.landmarks[3 * i + 1]];
    ctx.strokeStyle = SKELETON.line;
    ctx.beginPath();
    for (const [a, b] of HAND_CONNECTIONS) { ctx.moveTo(...p(a)); ctx.lineTo(...p(b)); }
    ctx.stroke();
    ctx.fillStyle = SKELETON.joint;
    for (let i = 0; i < 21; i++) {
      ctx.beginPath();
      ctx.arc(...p(i), SKELETON.radius, 0, 2 * Math.PI);
      ctx.fill();
    }
  }
}

function describe(r) {
  const list = $("hands-list");
  list.replaceChildren(...(r.hands.length ? r.hands : [null]).map((h) => {
    const li = document.createElement("li");
    if (!h) {
      li.className = "muted";
      li.textContent = "no hand";
    } else {
      li.dataset.gesture = h.gesture ?? "";
      li.textContent = `${h.handedness} hand (${(100 * h.handednessScore).toFixed(0)}%): ` +
        `${h.gesture ? h.gesture.replace("_", " ") : "no gesture"}${h.tracked ? ", tracked" : ""}`;
    }
    return li;
  }));
}

const page = startPage({
  kind: "hands",
  photo: { file: "hand.jpg", note: "an open palm (OpenCV's documentation, Apache-2.0)" },
  stages: { detector: "palm detector", warp: "hand crop", landmarks: "landmark model" },
  draw, describe, options: { maxHands: 2 },
});
$("tracking").onchange = (e) => page.configure({ tracking: e.target.checked });

window.visionPage = page;
