"""Does the stance model give a perspective the same side whatever form the claim takes?

:func:`forms_check` scores every gold (claim, perspective) pair of some claims under the
claim as stated, as a question and as a debate motion (:func:`perspectrum.text.claim_forms.rephrase`,
labels unchanged) and under its opposite (:func:`perspectrum.text.polarity.negate`, labels
flipped), at the model's own setting. It reports accuracy per rewrite and per form the claims
are stated in (:func:`perspectrum.text.claim_forms.form_of`, plus the claims that ban,
abolish, limit or end something), each with its ``gap``: how many points it lies below the
rest (a rewrite: below the same claims as stated; a group of claims: below the other claims).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from perspectrum.data import Claim, Dataset
from perspectrum.eval.ir import best_of
from perspectrum.eval.trained import stance_predict
from perspectrum.models.inputs import claim_perspective_input
from perspectrum.text.claim_forms import REPHRASINGS, form_of, rephrase
from perspectrum.text.polarity import is_restrictive, negate

#: Claim variants scored: as stated, each rewrite, and the opposite (labels flipped).
VARIANTS = ("stated", *REPHRASINGS, "negated")
#: Groups of fewer claims are reported but left out of ``worst_gap``: one claim's pairs say
#: more about that claim than about its form.
MIN_CLAIMS = 5


def _share(rows: Sequence[bool]) -> dict[str, Any]:
    return {"accuracy": round(100 * float(np.mean(rows)), 2) if rows else None, "pairs": len(rows)}


#: Thresholds tried for the best-on-the-split accuracies of :func:`_both_ways` (and of the
#: shortcut-gap benchmark): 0.1 to 0.9.
GRID = [round(0.1 + 0.02 * i, 2) for i in range(41)]


def _both_ways(scores: Mapping[tuple[tuple[str, int], int], float], gold: Mapping[tuple[int, int], bool],
               setting: Mapping[str, Any]) -> dict[str, Any]:
    """Reading each pair both ways: P(support) as stated averaged with 1 − P(support) under the
    claim's opposite, where the claim has one. Its accuracy beside the stated claim's, each at
    the model's setting and at the threshold best on these very pairs (an upper bound for both,
    so the two compare fairly)."""
    stated = {(cid, pid): s for ((variant, cid), pid), s in scores.items() if variant == "stated"}
    both = {key: (s + 1.0 - scores[(("negated", key[0]), key[1])]) / 2
            if (("negated", key[0]), key[1]) in scores else s for key, s in stated.items()}
    out: dict[str, Any] = {}
    for name, values in (("stated", stated), ("both_ways", both)):
        def accuracy(threshold: float) -> float:
            said = stance_predict(values, {**setting, "threshold": threshold})
            return round(100 * float(np.mean([said[key] == gold[key] for key in values])), 2)

        best, at_best = best_of(GRID, accuracy)
        out[name] = {"at_setting": accuracy(setting["threshold"]), "best_threshold": best, "at_best": at_best}
    return out


def forms_check(models: Sequence[Any], dataset: Dataset, claims: Sequence[Claim], setting: Mapping[str, Any],
                show_progress: bool = False) -> dict[str, Any]:
    """Accuracy by claim variant and by the form claims are stated in, with each one's gap.

    ``models`` answer ``score(pairs, show_progress=…, description=…)`` with P(support)
    (their mean is used); ``setting`` is the model's stored ``{"threshold", "centre"}``.
    """
    text: dict[tuple[str, int], str] = {}
    for claim in claims:
        text[("stated", claim.cid)] = claim.text
        text.update({(name, claim.cid): rewrite for name, rewrite in rephrase(claim.text).items()})
        opposite = negate(claim.text)
        if opposite is not None:
            text[("negated", claim.cid)] = opposite
    gold = {(c.cid, pid): k.stance == "SUPPORT" for c in claims for k in c.clusters for pid in k.pids}
    keys = [((variant, c.cid), pid) for variant in VARIANTS for c in claims if (variant, c.cid) in text
            for k in c.clusters for pid in k.pids]
    pairs = [claim_perspective_input(text[variant_cid], dataset.perspectives[pid].text) for variant_cid, pid in keys]
    scores = np.mean([member.score(pairs, show_progress=show_progress, description="stance (claim forms)")
                      for member in models], axis=0)
    said = stance_predict({key: float(s) for key, s in zip(keys, scores)}, setting)
    right = {key: said[key] == (gold[(key[0][1], key[1])] != (key[0][0] == "negated")) for key in keys}
    stated = {(cid, pid): r for ((variant, cid), pid), r in right.items() if variant == "stated"}

    out: dict[str, Any] = {"stated": _share(list(stated.values())), "rewritten": {}, "forms": {}}
    for variant in VARIANTS[1:]:
        cids = {cid for (name, cid) in text if name == variant}
        rows = [r for ((name, cid), _), r in right.items() if name == variant]
        same = [r for (cid, _), r in stated.items() if cid in cids]
        out["rewritten"][variant] = {**_share(rows), "claims": len(cids),
                                     "gap": round(100 * (float(np.mean(same)) - float(np.mean(rows))), 2)
                                     if rows else None}
    groups: dict[str, set[int]] = {}
    for claim in claims:
        groups.setdefault(form_of(claim.text), set()).add(claim.cid)
        if is_restrictive(claim.text):
            groups.setdefault("restrictive", set()).add(claim.cid)
    for name, cids in sorted(groups.items()):
        rows = [r for (cid, _), r in stated.items() if cid in cids]
        rest = [r for (cid, _), r in stated.items() if cid not in cids]
        out["forms"][name] = {**_share(rows), "claims": len(cids),
                              "gap": round(100 * (float(np.mean(rest)) - float(np.mean(rows))), 2)
                              if rows and rest else None}
    out["both_ways"] = _both_ways(dict(zip(keys, map(float, scores))), gold, setting)
    gaps = [row["gap"] for part in ("rewritten", "forms") for row in out[part].values()
            if row["gap"] is not None and row["claims"] >= MIN_CLAIMS]
    out["worst_gap"] = max(gaps) if gaps else None
    out["examples"] = [[c.text, *rephrase(c.text).values()] for c in claims[:3]]
    return out
