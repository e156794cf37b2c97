// WeChat Worker entry (app.json "workers": "workers"): everything it imports lives in this folder.
import "./lib/hosts/miniprogram-polyfills.js";
import { startWorker } from "./worker-main.js";

startWorker(worker, "wechat");
