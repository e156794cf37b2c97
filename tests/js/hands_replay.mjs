// A runtime-like object that replays the model calls python_ref's pipelines made (tests/js/hands_fixtures.py): each
// run() checks that its input is bit-identical to Python's (a checksum of the float32 words) and answers Python's
// outputs, so the JS pipeline gets exactly what Python got. Works in Node and in a page (no Node imports).

/** Sum of the float32 input's 32-bit words mod 2^32 (hands_fixtures.checksum). */
export function checksum(f32) {
  const u = new Uint32Array(f32.buffer, f32.byteOffset, f32.length);
  let s = 0;
  for (let i = 0; i < u.length; i++) s = (s + u[i]) % 4294967296;
  return s;
}

/** tape: [{model, input, outputs: {name: [offset, size]}}]; data: the Float32Array all outputs live in. */
export function replayRuntime(tape, data) {
  let next = 0;
  const rt = {
    host: "replay",
    calls: () => next,
    done: () => next === tape.length,
    async load(source) {
      const file = String(source instanceof URL ? source.pathname : source).split("/").pop().replace(/\.wrt$/, "");
      return {
        async run(feeds) {
          const entry = tape[next];
          if (!entry) throw new Error(`replay: call ${next} to ${file} past the end of Python's ${tape.length} calls`);
          if (entry.model !== file) throw new Error(`replay: call ${next} runs ${file}, Python ran ${entry.model}`);
          const [x] = Object.values(feeds);
          const sum = checksum(x.data instanceof Float32Array ? x.data : Float32Array.from(x.data));
          if (sum !== entry.input) throw new Error(`replay: call ${next} (${file}): the input differs from Python's`);
          next++;
          const out = {};
          for (const [name, [off, size]] of Object.entries(entry.outputs)) out[name] = { data: data.subarray(off, off + size) };
          return out;
        },
        release() {},
      };
    },
  };
  return rt;
}
