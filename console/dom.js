// Builds elements from text only: nothing here parses HTML, so whatever a
// harness printed is shown as the text it is.

const SVG = "http://www.w3.org/2000/svg";

function fill(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "text") el.textContent = String(value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An HTML element with attributes (`on…` ones are listeners, `text` its text) and children. */
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element, as `h`. */
export function svg(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG, tag), attrs, children);
}

/** Replaces `el`'s children. */
export function replace(el, ...children) {
  el.replaceChildren();
  return fill(el, {}, children);
}
