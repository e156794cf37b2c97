import { createTeachPage } from "../../lib/teach-page.js";

Page(createTeachPage(my, { platform: "alipay" }));
