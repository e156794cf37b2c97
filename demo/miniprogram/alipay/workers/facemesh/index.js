// Alipay Worker entry (app.json "workers": "workers"; iOS needs the experimental Worker): everything it imports
// lives in this folder.
import "./lib/hosts/miniprogram-polyfills.js";
import { startWorker } from "./worker-main.js";

startWorker(worker, "alipay");
