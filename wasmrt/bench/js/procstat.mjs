// Scheduler figures of the bench's own processes, from Linux's /proc (Node side only; the page asks the driver).
import fs from "node:fs";

/** How long the threads of process `pid` ("self": this one) have waited for a core while ready to run, in ms: the
 * second field of each /proc/PID/task/TID/schedstat; -1 without /proc. Two threads of a run that share one core (the
 * OS put a woken pool thread or Worker beside the caller) show as waits of milliseconds. */
export function waitMs(pid = "self") {
  let tids;
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return -1;
  }
  let sum = 0;
  for (const tid of tids) {
    try {
      sum += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[1]);
    } catch {
      // a thread that ended in between
    }
  }
  return sum / 1e6;
}
