import { createTryonPage } from "../../lib/tryon-page.js";

Page(createTryonPage(wx, { platform: "wechat", gestures: true }));
