// Where the teach page keeps its tuned model between visits: one IndexedDB record {bytes (the .wrt), classes,
// savedAt}. IndexedDB holds binary data of this size (EfficientNet-Lite0 with a new head: about 15 MB) without
// encoding it, and stays on this device.
const DB = "wasmrt-teach", STORE = "models", KEY = "tuned";

function open() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(new Error(`cannot open the page's storage: ${req.error?.message ?? req.error}`));
  });
}

async function transact(mode, fn) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const req = fn(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = () => reject(new Error(`the page's storage failed: ${tx.error?.message ?? tx.error}`));
      tx.onabort = () => reject(new Error(`the page's storage refused the model: ${tx.error?.message ?? "aborted"}`));
    });
  } finally {
    db.close();
  }
}

/** Keep a tuned model: {bytes: Uint8Array, classes, savedAt}. */
export const saveModel = (record) => transact("readwrite", (s) => s.put(record, KEY));

/** The kept model's record, or undefined. */
export const loadModel = () => transact("readonly", (s) => s.get(KEY));
