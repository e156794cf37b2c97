// The background replacement page: MediaPipe's selfie segmentation (wasmrt.vision.SelfieSegmenter, the package's
// models: the mask made and the frame composited in one pass, SelfieSegmenter.replaceBackground / blurBackground)
// run in a Worker or on the page; the page shows the composited frame. Tests drive it through window.visionPage
// (tests/test_vision_pages.py).
import { getPixels } from "../../js_bindings/src/image.js";
import { $, startPage } from "./vision-page.js";

const page = startPage({
  kind: "segmentation",
  photo: { file: "astronaut.png", note: "scikit-image's astronaut (public domain)" },
  stages: { model: "segmentation model", post: "mask and compositing" },
  draw: (ctx, img, r) => ctx.putImageData(r.pixels, 0, 0),
  describe: (r) => { $("mask-info").textContent = `${r.model} model; person on ${(100 * r.personShare).toFixed(0)}% of the frame`; },
});

let backgroundPhoto = null;
async function setMode(mode) {
  for (const b of document.querySelectorAll("#backgrounds button")) b.classList.toggle("active", b.dataset.mode === mode);
  const settings = { mode, color: $("color").value, radius: +$("radius").value };
  if (mode === "image") {
    backgroundPhoto ??= await getPixels(await (await fetch(new URL("./samples/coffee.png", import.meta.url))).blob());
    settings.image = { data: backgroundPhoto.data, width: backgroundPhoto.width, height: backgroundPhoto.height };
  }
  await page.configure(settings);
}
for (const b of document.querySelectorAll("#backgrounds button")) b.onclick = () => setMode(b.dataset.mode);
$("color").oninput = (e) => page.configure({ color: e.target.value });
$("radius").oninput = (e) => {
  $("radius-out").textContent = e.target.value;
  page.configure({ radius: +e.target.value });
};

window.visionPage = { ...page, setMode };
