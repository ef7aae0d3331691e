// The map page: sends a claim and a pile of documents (pasted, or .txt/.md files read here in
// the browser) to POST /map and draws the answer, most prevalent perspective first. No
// framework, nothing fetched from outside this server; every text from the documents is set
// as text (never as HTML), so nothing a document holds can become markup.
"use strict";

// Files read as plain text here; other kinds need `perspectrum map` (it reads PDF, HTML, JSONL).
const TEXT_FILES = /\.(txt|text|md|markdown)$/i;
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
  const prevalence = `${shared} (${percent(found.share)}), ${counted(found.units, "unit")}`;
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
  $("result-meta").textContent = `${counted(result.documents, "document")} read · ` +
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

function readText(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsText(file, "utf-8");
  });
}

// The documents to send: each pasted text ("pasted 1", …), then each .txt/.md file picked (by
// its name; other kinds are left out, see leftOut).
async function gather() {
  const documents = [];
  const pasted = $("texts").value.split(SEPARATOR).filter((text) => text.trim());
  pasted.forEach((text, n) => documents.push({id: `pasted ${n + 1}`, text}));
  const used = new Set(documents.map((d) => d.id));
  for (const file of $("files").files) {
    if (!TEXT_FILES.test(file.name)) continue;
    let id = file.name;
    for (let n = 2; used.has(id); n += 1) id = `${file.name} (${n})`;
    used.add(id);
    documents.push({id, text: await readText(file)});
  }
  return documents;
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
    const documents = await gather();
    const note = leftOut();  // one line on the files left out, shown again with the answer
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
