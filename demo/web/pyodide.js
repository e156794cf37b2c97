// Starts Pyodide (npm's pyodide, served at /pyodide/), installs micropip and the pure-Python wasmrt wheel (both
// served at /pyodide-wheels/, named by its wheels.json), then runs the page's <script type="text/python">.
// window.pyodidePage holds the interpreter and the state, for tests.
import { loadPyodide } from "../../pyodide/pyodide.mjs";

const status = document.getElementById("status");
const program = document.getElementById("program").textContent.trim();
document.getElementById("program-text").textContent = program;
const state = { py: null, error: null };
window.pyodidePage = state;

function show(text, s) {
  status.textContent = text;
  status.dataset.state = s;
}

try {
  const wheels = new URL("../../pyodide-wheels/", location.href);
  const names = await (await fetch(new URL("wheels.json", wheels))).json();
  const py = await loadPyodide({ indexURL: new URL("../../pyodide/", location.href).href });
  state.py = py;
  show("Installing wasmrt with micropip…", "installing");
  const micropip = await fetch(new URL(names.micropip, wheels));
  py.unpackArchive(await micropip.arrayBuffer(), "wheel");
  await py.runPythonAsync(`import micropip\nawait micropip.install(${JSON.stringify(new URL(names.wasmrt, wheels).href)})`);
  show("Running the program…", "running");
  await py.runPythonAsync(program);
  show("Done.", "done");
} catch (e) {
  state.error = String(e?.message ?? e);
  show(`Failed: ${state.error.split("\n").filter(Boolean).pop()}`, "error");
}
