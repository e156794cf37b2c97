// The peers' folder as the Chromium host serves it (chromium_driver.mjs), and a classic script of it loaded into
// the bench page: shared by page.mjs and train.mjs.

export const NM = "/peers/node_modules";

/** Load a classic <script> (a UMD bundle such as TF.js) into the page; resolves once it ran. */
export function script(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = src;
    s.onload = resolve;
    s.onerror = () => reject(new Error(`cannot load ${src}`));
    document.head.appendChild(s);
  });
}
