"""What the console's browser tests measure in the page (docs/console.md "Layout"): scripts
for Playwright's ``evaluate``."""

from __future__ import annotations

__all__ = ["BROKEN_WORDS", "DECODE", "OVERFLOW", "PLACES", "WIDE"]

# Every run of letters and digits in a text node of the page (form fields aside) whose first
# and last characters sit on different lines: a word the layout broke. A break at a space,
# "/", "-", ":" or "_" is between words and allowed.
BROKEN_WORDS = """() => {
  const broken = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || el.closest("textarea, select, option, dialog")) continue;
    if (!el.getClientRects().length) continue;
    for (const m of node.data.matchAll(/[\\p{L}\\p{N}]{2,}/gu)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + 1);
      const first = range.getBoundingClientRect();
      range.setStart(node, m.index + m[0].length - 1);
      range.setEnd(node, m.index + m[0].length);
      const last = range.getBoundingClientRect();
      if (last.top > first.top + first.height / 2) {
        broken.push(`${m[0]} in <${el.tagName.toLowerCase()} class="${el.className}">`);
      }
    }
  }
  return broken;
}"""

OVERFLOW = """() => [document.documentElement.scrollWidth, window.innerWidth]"""

# Every visible element whose box reaches past the window's right edge, and every section that
# scrolls sideways (its content wider than itself).
WIDE = """() => {
  const out = [];
  for (const el of document.body.querySelectorAll("*")) {
    if (el.closest("dialog, [hidden]")) continue;
    const r = el.getBoundingClientRect();
    if (r.width && r.right > window.innerWidth + 0.5) {
      out.push(`${el.tagName} #${el.id} right ${r.right}`);
    }
  }
  for (const s of document.querySelectorAll("main:not([hidden]) section")) {
    if (s.scrollWidth > s.clientWidth + 1) {
      out.push(`section #${s.id} scrolls: ${s.scrollWidth} > ${s.clientWidth}`);
    }
  }
  return out;
}"""

# Where the parts are: the queue's first item (it must be in the first screen), the columns the
# sections make, and whether each key part is in view and drawn.
PLACES = """() => {
  const box = (sel) => {
    const e = document.querySelector(sel);
    if (!e) return null;
    const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, width: r.width, height: r.height};
  };
  const sections = [...document.querySelectorAll("#overview > section")];
  const lefts = new Set(sections.map(s => Math.round(s.getBoundingClientRect().left)));
  const keys = ["header #q", "#queue .item", "#agents table", "#claims table",
                "#conflicts table", "#audit div", "#channels table"];
  const shown = (k) => !!box(k) && box(k).width > 0 && box(k).height > 0;
  return {item: box("#queue .item"), queue: box("#queue-section"), columns: lefts.size,
          shown: Object.fromEntries(keys.map(k => [k, shown(k)]))};
}"""

# A screenshot decoded by the browser: its size, how many colours a grid of samples holds, and
# the share of samples unlike the most common colour (a blank or one-colour shot has ~0).
DECODE = """async (b64) => {
  const img = new Image();
  img.src = "data:image/png;base64," + b64;
  await img.decode();
  const c = document.createElement("canvas");
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext("2d");
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  const counts = new Map();
  let n = 0;
  for (let y = 0; y < c.height; y += 7) for (let x = 0; x < c.width; x += 7) {
    const i = (y * c.width + x) * 4;
    const k = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
    counts.set(k, (counts.get(k) || 0) + 1); n++;
  }
  const top = Math.max(...counts.values());
  return {width: c.width, height: c.height, colours: counts.size, other: (n - top) / n};
}"""
