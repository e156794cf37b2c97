import { createTryonPage } from "../../lib/tryon-page.js";

Page(createTryonPage(my, { platform: "alipay", gestures: true }));
