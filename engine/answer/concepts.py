"""Concept search (SPEC §9): the documents whose concept id or title holds the query.

A case-insensitive substring match (both sides normalised as terms are) over every document
of the index, sorted by concept_id.
"""

from __future__ import annotations

from typing import Any

from ..index.index import Index
from ..text.terms import normalise
from .requests import ConceptsRequest


def search_concepts(
    index: Index,
    revision: str,
    req: ConceptsRequest,
    *,
    skip_invalid: bool = False,
    h1_titles: bool = True,
) -> dict[str, Any]:
    """The SPEC §9 result for `req` over a checked index of the snapshot `revision`.

    The concept title rule: a file's front matter `title`, else (`h1_titles`, every front's
    default) its first level-1 heading, so that notes without front matter are found by
    their titles; `strict` asks for okf's rule, front matter only (h1_titles False)."""
    needle = normalise(req.query)
    found = []
    for block in index.blocks:
        h1 = _first_h1s(block) if h1_titles else {}
        for doc, (cid, title, i) in enumerate(
            zip(block.concept, block.title, block.doc_input, strict=True)
        ):
            if not title:
                title = h1.get(doc, "")
            if needle in normalise(cid) or needle in normalise(title):
                found.append(
                    {
                        "concept_id": cid,
                        "path": block.paths[i],
                        "title": title,
                        "content_sha256": block.shas[i],
                    }
                )
    found.sort(key=lambda c: c["concept_id"])
    result: dict[str, Any] = {
        "query": req.query,
        "snapshot_revision": revision,
        "total": len(found),
        "truncated": len(found) > req.limit,
        "concepts": found[: req.limit],
    }
    if skip_invalid:
        result["skipped"] = [x.to_json() for x in index.problems]
    return result


def _first_h1s(block: Any) -> dict[int, str]:
    """Each document's first level-1 heading that has text, for those without a title."""
    out: dict[int, str] = {}
    titles, headings, docs = block.title, block.heading, block.sec_doc
    for s, level in enumerate(block.sec_level):
        if level == 1:
            doc = docs[s]
            if doc not in out and not titles[doc] and headings[s]:
                out[doc] = headings[s]
    return out


__all__ = ["search_concepts"]
