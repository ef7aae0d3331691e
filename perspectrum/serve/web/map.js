// The map page: sends a claim and a pile of documents (pasted, or .txt/.md files read here in
// the browser as `perspectrum map` reads them) to POST /map and draws the answer, most prevalent
// perspective first. No framework, nothing fetched from outside this server; every text from
// the documents is set as text (never as HTML), so nothing a document holds can become markup.
"use strict";

// Files read as plain text here; other kinds need `perspectrum map` (it reads PDF, HTML, JSONL).
const TEXT_FILES = /\.(txt|text|md|markdown|rst)$/i;
// Byte-order marks, longest first (UTF-32's starts as UTF-16's does), with the encoding each
// names, as `perspectrum map` reads text files (perspectrum/text/reading.py, decode).
const MARKS = [[[0xff, 0xfe, 0x00, 0x00], "utf-32le", "UTF-32"], [[0x00, 0x00, 0xfe, 0xff], "utf-32be", "UTF-32"],
               [[0xef, 0xbb, 0xbf], "utf-8", "UTF-8"], [[0xff, 0xfe], "utf-16le", "UTF-16"],
               [[0xfe, 0xff], "utf-16be", "UTF-16"]];
// What Windows-1252 reads bytes 0x80 to 0x9f as (the rest as Latin-1 does), the bytes it leaves
// undefined, and the most of its letters that may be accented: past it, the bytes are another
// encoding's (Cyrillic, Greek, Chinese…) read as accented letters.
const CP1252 = "\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f" +
  "\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178";
const UNDEFINED_1252 = new Set([0x81, 0x8d, 0x8f, 0x90, 0x9d]);
const MAX_ACCENTED_SHARE = 0.4;
// A line with only --- on it separates pasted documents.
const SEPARATOR = /^[ \t]*---[ \t]*$/m;

function counted(n, what) {
  return `${n.toLocaleString("en")} ${what}${n === 1 ? "" : "s"}`;
}

function sideText(found) {
  if (found.side === "unclear") return "side unclear";
  return `${found.side === "support" ? "supports" : "undermines"} the claim: ${percent(found.confidence)} sure`;
}

function quote(found) {
  const block = element("blockquote", "evidence");
  block.append(element("p", "", found.text));
  block.append(element("cite", "", `${found.document}, characters ${found.start}–${found.end}`));
  return block;
}

function card(found, read) {
  const item = element("li", `cluster ${found.side}`);
  const head = element("div", "card-head");
  head.append(element("p", "perspective", found.key_point), element("span", `side ${found.side}`, sideText(found)));
  item.append(head);
  const shared = `${found.documents} of ${counted(read, "document")}`;
  const bar = element("div", "bar");
  bar.setAttribute("role", "img");
  bar.setAttribute("aria-label", `${shared} (${percent(found.share)})`);
  const fill = element("span", "fill");
  fill.style.width = `${(100 * found.share).toFixed(1)}%`;
  bar.append(fill);
  const named = found.made_by.slice(0, 3).join(", ") + (found.made_by.length > 3 ? ` and ${found.made_by.length - 3} more` : "");
  const prevalence = `${shared} (${percent(found.share)}), ${counted(found.units, "unit")}: ${named}`;
  item.append(bar, element("p", "meta prevalence", prevalence));
  const quotes = element("details", "quotes");
  quotes.append(element("summary", "", counted(found.quotes.length, "quote")));
  for (const each of found.quotes) quotes.append(quote(each));
  item.append(quotes);
  return item;
}

function show(result) {
  const floor = result.documents >= result.settings.min_documents ? result.settings.min_documents : 1;
  $("result-claim").textContent = `Perspectives on “${result.claim}”`;
  const copies = Object.values(result.duplicates || {}).reduce((n, later) => n + later.length, 0);
  $("result-meta").textContent = `${counted(result.documents, "document")} read · ` +
    (copies ? `${copies.toLocaleString("en")} near-${copies === 1 ? "copy" : "copies"} of another counted once · ` : "") +
    `${counted(result.units, "argument unit")} · ${result.seconds.toFixed(1)} s`;
  const shared = $("perspectives");
  shared.replaceChildren(...result.perspectives.map((p) => card(p, result.documents)));
  if (!shared.children.length) shared.append(element("li", "empty", "none found"));
  $("shared-count").textContent = `(${result.perspectives.length})`;
  $("shared-hint").textContent = floor > 1 ? `Made by at least ${counted(floor, "document")}, most documents first.`
    : "Most documents first.";
  $("also").replaceChildren(...result.also_mentioned.map((p) => card(p, result.documents)));
  $("also-count").textContent = `(${result.also_mentioned.length})`;
  $("also-hint").textContent = `Made by fewer than ${counted(floor, "document")}.`;
  $("also-box").hidden = !result.also_mentioned.length;
  $("result").hidden = false;
}

// Why a file's bytes are not read as text (a file skipped, as `perspectrum map` skips it).
class Unreadable extends Error {}

// UTF-32 after its mark (browsers do not decode it), little- or big-endian.
function utf32(bytes, little) {
  if (bytes.length % 4) throw new Unreadable("not UTF-32 text though it starts as UTF-32 does");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const points = [];
  for (let at = 4; at < bytes.length; at += 4) {
    const point = view.getUint32(at, little);
    if (point > 0x10ffff || (point >= 0xd800 && point < 0xe000)) {
      throw new Unreadable("not UTF-32 text though it starts as UTF-32 does");
    }
    points.push(point);
  }
  let text = "";
  for (let at = 0; at < points.length; at += 8192) text += String.fromCodePoint(...points.slice(at, at + 8192));
  return text;
}

// Bytes read as Windows-1252, by its table above (some decoders read the label as Latin-1).
function windows1252(bytes) {
  const character = (byte) => (byte >= 0x80 && byte < 0xa0 ? CP1252[byte - 0x80] : String.fromCharCode(byte));
  let text = "";
  for (let at = 0; at < bytes.length; at += 8192) text += Array.from(bytes.subarray(at, at + 8192), character).join("");
  return text;
}

// A file's bytes as text, with the name of their encoding, as `perspectrum map` reads a text
// file: the encoding a byte-order mark names, else UTF-8, else Windows-1252. Unreadable for NUL
// bytes without a mark (binary), UTF-8 mixed with another encoding (as many valid UTF-8
// characters as bytes that are not), and bytes no encoding tried reads as text.
function decoded(bytes) {
  for (const [mark, codec, name] of MARKS) {
    if (!mark.every((byte, n) => bytes[n] === byte)) continue;
    if (codec.startsWith("utf-32")) return {text: utf32(bytes, codec === "utf-32le"), encoding: name};
    try {
      return {text: new TextDecoder(codec, {fatal: true}).decode(bytes), encoding: name};  // the mark dropped
    } catch (error) {
      throw new Unreadable(`not ${name} text though it starts as ${name} does`);
    }
  }
  if (bytes.includes(0)) throw new Unreadable("holds NUL bytes; is it a binary file?");
  try {
    return {text: new TextDecoder("utf-8", {fatal: true}).decode(bytes), encoding: "UTF-8"};
  } catch (error) {
    // not UTF-8: mixed, or another encoding (below)
  }
  let bad = 0;
  let beyond = 0;
  for (const ch of new TextDecoder("utf-8").decode(bytes)) {
    if (ch === "\ufffd") bad += 1;
    if (ch.codePointAt(0) > 127) beyond += 1;
  }
  if (beyond - bad >= bad) throw new Unreadable("mixes UTF-8 with another encoding; save it as UTF-8");
  const unknown = "not text in UTF-8, UTF-16 or Windows-1252; is it a binary file?";
  if (bytes.some((byte) => UNDEFINED_1252.has(byte))) throw new Unreadable(unknown);
  const text = windows1252(bytes);
  const letters = [...text].filter((ch) => /\p{L}/u.test(ch));
  if (letters.filter((ch) => ch.codePointAt(0) > 127).length > MAX_ACCENTED_SHARE * letters.length) {
    throw new Unreadable(unknown);
  }
  return {text, encoding: "Windows-1252"};
}

// The documents to send: each pasted text ("pasted 1", …), then each text file picked, named
// by its name (as `perspectrum map` names a file in a folder; a name taken already gets " (2)"),
// read as `perspectrum map` reads it and sent with its encoding; and "name: why" for each file
// that could not be read. Other kinds are left out (see leftOut).
async function gather() {
  const documents = [];
  const unread = [];
  const pasted = $("texts").value.split(SEPARATOR).filter((text) => text.trim());
  pasted.forEach((text, n) => documents.push({id: `pasted ${n + 1}`, text}));
  const used = new Set(documents.map((d) => d.id));
  for (const file of $("files").files) {
    if (!TEXT_FILES.test(file.name)) continue;
    let read;
    try {
      read = decoded(new Uint8Array(await file.arrayBuffer()));
    } catch (error) {
      if (!(error instanceof Unreadable)) throw error;
      unread.push(`${file.name}: ${error.message}`);
      continue;
    }
    let id = file.name;
    for (let n = 2; used.has(id); n += 1) id = `${file.name} (${n})`;
    used.add(id);
    documents.push({id, text: read.text, encoding: read.encoding});
  }
  return {documents, unread};
}

async function answerOf(response) {
  try {
    return await response.json();
  } catch (error) {
    return {};
  }
}

async function map(claim) {
  const status = $("status");
  status.className = "";
  $("go").disabled = true;
  try {
    const {documents, unread} = await gather();
    // one line on the files left out or not read, shown again with the answer
    const note = [leftOut(), ...unread.map((why) => `skipped ${why}`)].filter(Boolean).join(" · ");
    if (!documents.length) {
      status.className = "error";
      status.textContent = note || "paste a text or pick a .txt or .md file";
      return;
    }
    status.textContent = `Mapping ${counted(documents.length, "document")}…`;
    const response = await fetch("/map", {method: "POST", headers: {"Content-Type": "application/json"},
                                          body: JSON.stringify({claim, documents})});
    if (response.status === 401) { location.reload(); return; }
    const body = await answerOf(response);
    if (!response.ok) {
      status.className = "error";
      status.textContent = body.detail || `the server answered ${response.status}`;
      return;
    }
    document.title = `${claim} · map · perspectrum`;
    show(body);
    status.textContent = note;
  } catch (error) {
    status.className = "error";
    status.textContent = `could not read the files or reach the server (${error.message})`;
  } finally {
    $("go").disabled = false;
  }
}

function leftOut() {
  const left = [...$("files").files].map((file) => file.name).filter((name) => !TEXT_FILES.test(name));
  return left.length ? `left out ${left.join(", ")}: only .txt and .md files are read here; ` +
    "PDF, HTML and JSONL need the command line (perspectrum map)" : "";
}

document.addEventListener("DOMContentLoaded", () => {
  $("files").addEventListener("change", () => {
    $("status").className = "";
    $("status").textContent = leftOut();
  });
  $("map-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const claim = $("claim").value.trim();
    if (claim) map(claim);
  });
});
