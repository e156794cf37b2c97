// Debian's Chromium (playwright-core, no browser download) as the demo page tests launch it: headless, without
// background network chatter, and with Chromium's synthetic camera, permission granted without a prompt (a .y4m
// file as the camera where one is given). Shared by the page tests' drivers.
import { chromium } from "playwright-core";

/** The browser; cfg.chromium: its executable (default /usr/bin/chromium); cfg.y4m: the fake camera's video. */
export function launchWithCamera(cfg) {
  return chromium.launch({
    executablePath: cfg.chromium ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
      ...(cfg.y4m ? [`--use-file-for-fake-video-capture=${cfg.y4m}`] : [])],
  });
}
