// The perspectrum page: asks POST /discover and draws the answer. No framework, no build
// step, nothing fetched from outside this server; every text from the answer is set as
// text (never as HTML), so a perspective or paragraph cannot inject markup.
"use strict";

// The window of a paragraph that states the perspective (character offsets
// window_start..window_end) in <mark>; the whole paragraph, window marked, behind a <details>.
function paragraph(hit) {
  const block = element("blockquote", "evidence");
  const start = hit.window_start, end = hit.window_end;
  const placed = Number.isInteger(start) && Number.isInteger(end) && start < end;
  const shown = element("p");
  if (placed) {
    if (start > 0) shown.append("…");
    shown.append(element("mark", "", hit.text.slice(start, end)));
    if (end < hit.text.length) shown.append("…");
  } else {
    shown.textContent = hit.text.length > 200 ? `${hit.text.slice(0, 200)}…` : hit.text;
  }
  block.append(shown);
  if (!placed && hit.text.length <= 200) return block;
  if (placed && start === 0 && end === hit.text.length) return block;
  const whole = element("details", "whole");
  whole.append(element("summary", "", "whole paragraph"));
  const body = element("p");
  if (placed) {
    body.append(hit.text.slice(0, start), element("mark", "", hit.text.slice(start, end)), hit.text.slice(end));
  } else {
    body.textContent = hit.text;
  }
  whole.append(body);
  block.append(whole);
  return block;
}

// The card's side in words: "supports the claim: 84% sure", or "side unclear (leans …)".
function sideText(found) {
  if (found.stance === "unclear") {
    const lean = found.support_calibrated >= 0.5 ? "support" : "undermine";
    return `side unclear (leans ${lean}, ${percent(found.stance_confidence)})`;
  }
  return `${found.stance === "support" ? "supports" : "undermines"} the claim: ${percent(found.stance_confidence)} sure`;
}

function cluster(found, looked) {
  const item = element("li", `cluster ${found.stance}`);
  item.append(element("p", "perspective", found.text));
  const bar = element("div", "bar");
  bar.setAttribute("role", "img");
  bar.setAttribute("aria-label", sideText(found));
  const fill = element("span", "fill");
  fill.style.width = percent(found.stance_confidence);
  bar.append(fill);
  item.append(bar, element("p", "meta", sideText(found)));
  const others = found.phrasings.slice(1);
  if (others.length) {
    const more = element("details", "phrasings");
    more.append(element("summary", "", `${others.length} other phrasing${others.length > 1 ? "s" : ""}`));
    const list = element("ul");
    for (const phrasing of others) list.append(element("li", "", phrasing.text));
    more.append(list);
    item.append(more);
  }
  if (looked && !found.evidence.length) {
    item.append(element("p", "no-evidence", "no evidence found in the pool for this perspective"));
  }
  if (found.evidence.length) {
    item.append(paragraph(found.evidence[0]));
    const rest = found.evidence.slice(1);
    if (rest.length) {
      const more = element("details", "more-evidence");
      more.append(element("summary", "", `${rest.length} more paragraph${rest.length > 1 ? "s" : ""}`));
      for (const hit of rest) more.append(paragraph(hit));
      item.append(more);
    }
  }
  return item;
}

function show(result) {
  $("result-claim").textContent = `“${result.claim}”`;
  $("permalink").href = `/?claim=${encodeURIComponent(result.claim)}`;
  $("result-meta").textContent =
    `${result.perspectives.length} perspectives · ${result.system} models · ${result.timings.total.toFixed(2)} s`;
  for (const side of ["support", "undermine", "unclear"]) {
    const list = $(side);
    const looked = "evidence" in result.timings;  // the evidence stage ran
    list.replaceChildren(...result.perspectives.filter((p) => p.stance === side).map((p) => cluster(p, looked)));
    $(`${side}-count`).textContent = `(${list.children.length})`;
    if (side === "unclear") $("unclear-box").hidden = !list.children.length;
    else if (!list.children.length) list.append(element("li", "empty", "none found"));
  }
  const rows = Object.entries(result.timings).map(([stage, seconds]) => {
    const row = element("tr");
    row.append(element("th", "", stage), element("td", "", (seconds * 1000).toFixed(0)));
    row.firstChild.scope = "row";
    return row;
  });
  $("timings").tBodies[0].replaceChildren(...rows);
  $("result").hidden = false;
}

async function discover(claim, remember) {
  const status = $("status");
  status.className = "";
  status.textContent = "Discovering…";
  $("go").disabled = true;
  try {
    const answer = await fetch("/discover", {method: "POST", headers: {"Content-Type": "application/json"},
                                             body: JSON.stringify({claim})});
    if (answer.status === 401) { location.reload(); return; }
    const body = await answer.json();
    if (!answer.ok) {
      status.className = "error";
      status.textContent = body.detail || `the server answered ${answer.status}`;
      return;
    }
    if (remember) history.pushState({claim}, "", `/?claim=${encodeURIComponent(claim)}`);
    document.title = `${claim} · perspectrum`;
    show(body);
    status.textContent = body.notice || "";
  } catch (error) {
    status.className = "error";
    status.textContent = `could not reach the server (${error.message})`;
  } finally {
    $("go").disabled = false;
  }
}

async function offerExamples() {
  try {
    const answer = await fetch("/examples");
    if (!answer.ok) return;
    const claims = await answer.json();
    if (claims.length) $("examples").append(element("span", "hint", "Try: "));
    for (const claim of claims) {
      const button = element("button", "example", claim);
      button.type = "button";
      button.addEventListener("click", () => { $("claim").value = claim; discover(claim, true); });
      $("examples").append(button);
    }
  } catch (error) { /* the page works without examples */ }
}

function fromAddress() {
  const claim = new URLSearchParams(location.search).get("claim");
  if (claim) { $("claim").value = claim; discover(claim, false); }
}

document.addEventListener("DOMContentLoaded", () => {
  $("ask").addEventListener("submit", (event) => {
    event.preventDefault();
    const claim = $("claim").value.trim();
    if (claim) discover(claim, true);
  });
  document.addEventListener("keydown", (event) => {
    const typing = ["INPUT", "TEXTAREA"].includes(document.activeElement?.tagName);
    if (event.key === "/" && !typing) { event.preventDefault(); $("claim").focus(); }
  });
  window.addEventListener("popstate", fromAddress);
  offerExamples();
  fromAddress();
});
