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
    index: Index, revision: str, req: ConceptsRequest, *, skip_invalid: bool = False
) -> dict[str, Any]:
    """The SPEC §9 result for `req` over a checked index of the snapshot `revision`."""
    needle = normalise(req.query)
    found = []
    for block in index.blocks:
        for cid, title, i in zip(block.concept, block.title, block.doc_input, strict=True):
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


__all__ = ["search_concepts"]
