import { createSegmentPage } from "../../lib/segment-page.js";

Page(createSegmentPage(my, { platform: "alipay" }));
