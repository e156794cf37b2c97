import { createTeachPage } from "../../lib/teach-page.js";

Page(createTeachPage(wx, { platform: "wechat" }));
