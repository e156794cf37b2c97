import { createSegmentPage } from "../../lib/segment-page.js";

Page(createSegmentPage(wx, { platform: "wechat" }));
