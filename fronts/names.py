"""Editor paths against workspace folders, compared as the volume compares names (SPEC §16).

An editor names a document by its URI, spelt as the user or the editor chose: on macOS's
default volumes (APFS, HFS+: case-insensitive, and blind to Unicode normalisation) and on
Windows (NTFS: case-insensitive) `Notes/Guide.md`, `notes/guide.md` and an NFC `café.md`
for an NFD `café.md` on disk are one file. Compared with `startswith` and `==`, such a
document was silently left out: its unsaved text not searched, its edits not re-checked.

- `volume_rules(folder)`: whether the volume holding `folder` folds case and normalisation,
  tested on the folder's own path (a case-swapped spelling of one of its names that stats as
  the same entry, or its other normalisation), else the platform's default volumes' rules.
- `below(folder, path, rules)`: the names of `path` under `folder` when it lies inside it,
  compared name by name under those rules (never by string prefix: folding can change a
  string's length, and `/ws-other` is not inside `/ws`).
- `Spelling.on_disk(...)`: a bundle-relative path as the editor spells it, turned into the
  names the disk stores, which are those the capture records, marks and overlays (engine
  paths are the name bytes as stored: SPEC §16), from the last capture's files, else from
  the folders' listings.

Where the volume compares names exactly (Linux, and case-sensitive volumes elsewhere) all of
this is the plain comparison it replaces, at no cost.

CITELINE_VOLUME_RULES forces the rules (`case`, `normalisation`, both comma-separated, or
`exact`): no case-insensitive volume can be mounted on the Linux machines that run the
tests, so the tests force macOS's rules this way.

This is the fronts' side of the platform seam: the rules' value and the test of a folder's
own names are engine/base/platform.py's (`VolumeRules`, `folds_spelling`); the fronts add the
forcing variable and the platform's default volumes as sys.platform names them.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import posixpath
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from citeline.engine.base.platform import VolumeRules, folds_spelling, other_normalisation

if TYPE_CHECKING:
    from citeline.engine.base.limits import Settings

FORCE = "CITELINE_VOLUME_RULES"


EXACT = VolumeRules(False, False)


def platform_rules(platform: str | None = None) -> VolumeRules:
    """The rules of the platform's default volumes: APFS on macOS folds case and
    normalisation, NTFS on Windows folds case, the others are exact."""
    platform = sys.platform if platform is None else platform
    if platform == "darwin":
        return VolumeRules(True, True)
    if platform == "win32":
        return VolumeRules(True, False)
    return EXACT


def forced_rules(value: str) -> VolumeRules:
    """The rules CITELINE_VOLUME_RULES names; ValueError for a word it does not know."""
    words = {w.strip().lower() for w in value.split(",") if w.strip()}
    unknown = words - {"case", "normalisation", "normalization", "exact"}
    if unknown:
        raise ValueError(f"{FORCE}: unknown {', '.join(sorted(unknown))}")
    return VolumeRules("case" in words, bool(words & {"normalisation", "normalization"}))


def volume_rules(folder: str, environ: Mapping[str, str] | None = None) -> VolumeRules:
    """The rules of the volume holding `folder` (see the module's docstring)."""
    forced = (os.environ if environ is None else environ).get(FORCE, "").strip()
    if forced:
        try:
            return forced_rules(forced)
        except ValueError:
            pass  # a misspelt test variable: the volume's own rules
    return _detected(os.path.abspath(folder))


@functools.lru_cache(maxsize=64)
def _detected(folder: str) -> VolumeRules:
    default = platform_rules()
    case = folds_spelling(folder, str.swapcase)
    norm = folds_spelling(folder, other_normalisation)
    return VolumeRules(
        default.folds_case if case is None else case,
        default.folds_normalisation if norm is None else norm,
    )


def _names(path: str, module: Any) -> tuple[str, list[str]]:
    drive, rest = module.splitdrive(path)
    if module.altsep:
        rest = rest.replace(module.altsep, module.sep)
    return drive, [n for n in rest.split(module.sep) if n and n != "."]


def below(folder: str, path: str, rules: VolumeRules, module: Any = os.path) -> list[str] | None:
    """The names of `path` below `folder` (both absolute) when `path` lies strictly inside
    it under the volume's `rules`, spelt as in `path`; None otherwise. `module`: os.path, or
    ntpath/posixpath in tests. A drive (`C:`, `\\\\server\\share`) is compared as Windows
    does whatever the rules (drive letters and share names are never case-sensitive)."""
    folder_drive, folder_names = _names(folder, module)
    drive, names = _names(path, module)
    if module.normcase(folder_drive) != module.normcase(drive):
        return None
    if ".." in names or ".." in folder_names or len(names) <= len(folder_names):
        return None
    key = rules.key
    if any(key(a) != key(b) for a, b in zip(folder_names, names, strict=False)):
        return None
    return names[len(folder_names) :]


def same_folder(one: str, other: str, rules: VolumeRules, module: Any = os.path) -> bool:
    """Whether two absolute paths name the same folder under the volume's `rules`."""
    drive_a, names_a = _names(one, module)
    drive_b, names_b = _names(other, module)
    return (
        module.normcase(drive_a) == module.normcase(drive_b)
        and len(names_a) == len(names_b)
        and all(rules.key(a) == rules.key(b) for a, b in zip(names_a, names_b, strict=True))
    )


def for_volume(settings: Settings, folder: str) -> Settings:
    """The engine's `settings` with `.gitignore` comparing names as the volume holding
    `folder` does (Settings.ignore_case / ignore_nfc: git's core.ignorecase and
    core.precomposeunicode, which git sets from the volume too)."""
    rules = volume_rules(folder)
    wanted = (rules.folds_case, rules.folds_normalisation)
    if (settings.ignore_case, settings.ignore_nfc) == wanted:
        return settings
    return dataclasses.replace(settings, ignore_case=wanted[0], ignore_nfc=wanted[1])


class Spelling:
    """Bundle-relative paths as an editor spells them → the names the disk stores.

    Looked up first among the files of the folder's last capture (a dictionary by key, made
    once per capture), else folder by folder in the listings, so that a file the capture has
    not seen yet (created since) is found too. A path the disk does not hold, or holds under
    two names of one key (a case-sensitive folder on a folding volume), keeps the editor's
    spelling: nothing on disk is the document, so nothing is replaced by its text."""

    def __init__(self) -> None:
        # folder -> (the capture's files it was made from, key -> stored path or None)
        self._maps: dict[str, tuple[object, dict[str, str | None]]] = {}

    def on_disk(
        self,
        folder: str,
        rel: str,
        rules: VolumeRules,
        captured: Mapping[str, Any] | None = None,
    ) -> str:
        if rules.exact or (captured is not None and rel in captured):
            return rel
        key = rules.key(rel)
        if captured is not None:
            found = self._map(folder, captured, rules).get(key, "")
            if found:
                return found
            if found is None:
                return rel  # two stored names of this key: not ours to choose
        return listed(folder, rel, rules) or rel

    def _map(
        self, folder: str, captured: Mapping[str, Any], rules: VolumeRules
    ) -> dict[str, str | None]:
        held = self._maps.get(folder)
        if held is not None and held[0] is captured:
            return held[1]
        by_key: dict[str, str | None] = {}
        for path in captured:
            k = rules.key(path)
            by_key[k] = None if k in by_key else path
        self._maps[folder] = (captured, by_key)
        return by_key


def listed(folder: str, rel: str, rules: VolumeRules) -> str | None:
    """`rel` spelt as the folders' listings store its names (an exact name first, else the
    one name of the same key), through folders only (no link followed); None when a name
    is missing or ambiguous."""
    out: list[str] = []
    parent = folder
    parts = rel.split("/")
    for i, name in enumerate(parts):
        last = i == len(parts) - 1
        try:
            with os.scandir(parent) as entries:
                candidates = [
                    e
                    for e in entries
                    if rules.key(e.name) == rules.key(name)
                    and (last or e.is_dir(follow_symlinks=False))
                ]
        except (OSError, ValueError):
            return None
        exact = [e for e in candidates if e.name == name]
        chosen = exact or candidates
        if len(chosen) != 1:
            return None
        out.append(chosen[0].name)
        parent = chosen[0].path
    return posixpath.join(*out) if out else None


__all__ = [
    "EXACT",
    "FORCE",
    "Spelling",
    "VolumeRules",
    "below",
    "forced_rules",
    "listed",
    "platform_rules",
    "same_folder",
    "volume_rules",
]
