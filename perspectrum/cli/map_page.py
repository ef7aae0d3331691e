"""A map as one self-contained HTML page (`perspectrum map --html REPORT.html`).

Everything is in the file: styles inline, no script, no font, no request to anywhere,
so the page opens from a mail attachment or a shared drive as it was written. Every text
on it comes from the documents, so every text is escaped; nothing a document holds can
become markup.
"""

from __future__ import annotations

from html import escape

from perspectrum.pipeline.map import MappedPerspective, PerspectiveMap

#: Colours of the three sides (the web page's and the terminal's).
_COLOUR = {"support": "#1a7f37", "undermine": "#cf222e", "unclear": "#9a6700"}
_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#1f2328}
h1{font-size:1.35rem;margin-bottom:.2rem}h2{font-size:1.05rem;margin-top:2rem}.meta{color:#59636e}
.p{border-left:6px solid;padding:.5rem .8rem;margin:.6rem 0;background:#f6f8fa;border-radius:4px}
.head{display:flex;gap:.8rem;align-items:baseline}.kp{flex:1;font-weight:600}.side{font-size:.85rem;font-weight:600}
.bar{height:6px;background:#d0d7de;border-radius:3px;margin:.35rem 0}
.bar span{display:block;height:6px;border-radius:3px}
details{font-size:.9rem}blockquote{margin:.3rem 0 .3rem .5rem;padding-left:.6rem;border-left:2px solid #d0d7de}
cite{color:#59636e;font-style:normal;font-size:.8rem}table{border-collapse:collapse}td{padding:.1rem .6rem .1rem 0}
"""


def counted(n: int, what: str) -> str:
    """``n`` and ``what``, plural unless one ("1 document", "3 units")."""
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _card(n: int, found: MappedPerspective) -> str:
    colour = _COLOUR[found.side]
    shown = f"{found.side} {found.confidence:.0%}" if found.side != "unclear" else "side unclear"
    quotes = "".join(
        f"<blockquote>{escape(q.text)}<br><cite>{escape(q.document)}, characters {q.start}–{q.end}</cite></blockquote>"
        for q in found.quotes)
    return (f'<div class="p" style="border-color:{colour}"><div class="head"><span>{n}.</span>'
            f'<span class="kp">{escape(found.key_point)}</span>'
            f'<span class="side" style="color:{colour}">{shown}</span></div>'
            f'<div class="bar" title="{found.share:.0%} of the documents"><span style="width:{100 * found.share:.1f}%;'
            f'background:{colour}"></span></div>'
            f"<details><summary>{counted(found.documents, 'document')}, {counted(found.units, 'unit')} "
            f"({found.share:.0%} of the documents)"
            f"</summary>{quotes}</details></div>")


def map_page(result: PerspectiveMap) -> str:
    """The page for ``result``: the claim, what was read, the perspectives most prevalent
    first (side, share of documents as a bar, every quote with its document and offsets),
    then the also-mentioned and what was skipped."""
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>Perspectives on {escape(result.claim)}"
             f"</title><style>{_STYLE}</style></head><body>",
             f"<h1>Perspectives on “{escape(result.claim)}”</h1>",
             f'<p class="meta">{counted(result.documents, "document")} read, {len(result.skipped)} skipped, '
             f'{counted(result.units, "argument unit")}, {counted(len(result.perspectives), "perspective")} made by '
             f"several documents and {len(result.also_mentioned)} by one.</p>"]
    if result.perspectives:
        parts.append("<h2>Perspectives</h2>")
        parts += [_card(n, found) for n, found in enumerate(result.perspectives, 1)]
    if result.also_mentioned:
        parts.append("<h2>Also mentioned (by one document)</h2>")
        parts += [_card(n, found) for n, found in enumerate(result.also_mentioned, 1)]
    if not result.perspectives and not result.also_mentioned:
        parts.append("<p>No argument units were found for the claim in these documents.</p>")
    if result.duplicates:
        rows = "".join(f"<tr><td>{escape(first)}</td><td>{escape(', '.join(copies))}</td></tr>"
                       for first, copies in result.duplicates.items())
        parts.append(f"<h2>Near-copies, counted once</h2><table><tr><th>document</th><th>its copies</th></tr>{rows}"
                     "</table>")
    if result.skipped:
        rows = "".join(f"<tr><td>{escape(s['source'])}</td><td>{escape(s['why'])}</td></tr>" for s in result.skipped)
        parts.append(f"<h2>Skipped</h2><table>{rows}</table>")
    parts.append("</body></html>\n")
    return "".join(parts)
