// Images for a prompt: chosen with a file picker or pasted into the
// prompt's box, listed by name and size (each can be taken out), and sent
// as the API's `attachments` (the service checks their bytes and caps and
// says why it refuses one).

import { h, replace } from "./dom.js";

const TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/** A file's bytes in base64 (its data: URL without the prefix). */
function base64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

/** A picker whose element is `el`; `attachments()` gives the API's list. */
export function imagePicker(id, pasteInto) {
  let files = [];
  const list = h("ul", { class: "images", id: `${id}-list`, "aria-label": "Images for this prompt" });
  const input = h("input", { type: "file", id, accept: TYPES.join(","), multiple: true });
  const show = () => replace(list, files.map((f, i) => {
    const remove = h("button", { type: "button", class: "remove", "aria-label": `Remove ${f.name}` }, "×");
    remove.addEventListener("click", () => {
      files.splice(i, 1);
      show();
    });
    return h("li", {}, `${f.name || "pasted image"} (${f.type}, ${f.size} bytes) `, remove);
  }));
  const add = (more) => {
    files = files.concat([...more].filter((f) => f.type.startsWith("image/")));
    show();
  };
  input.addEventListener("change", () => {
    add(input.files);
    input.value = "";
  });
  // A pasted image joins the list; pasted text goes into the box as usual.
  pasteInto.addEventListener("paste", (e) => {
    const pasted = [...(e.clipboardData ? e.clipboardData.files : [])];
    if (pasted.length) {
      e.preventDefault();
      add(pasted);
    }
  });
  const el = h("div", { class: "field images-field" },
    h("label", { for: id }, "Images"), input, list);
  return {
    el,
    /** The images as `attachments`, or none when there are none. */
    async attachments() {
      if (!files.length) return undefined;
      return Promise.all(files.map(async (f) => ({ type: "image", media_type: f.type, data: await base64(f) })));
    },
    clear() {
      files = [];
      show();
    },
  };
}
