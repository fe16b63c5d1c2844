"""The operations a front offers (SPEC §6, §8, §9, §18), declared once.

Each `Operation` is named as its contract is (engine/contracts/<name>.request.json and
<name>.result.json) and says how its request is read from JSON and how the engine runs it.
The fronts index this table by name — the language server's commands (`citeline.<name>`),
the command line's subcommands, the MCP tools, the renderers — rather than each listing
the operations for itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from .answer.requests import ConceptsRequest, SearchRequest

if TYPE_CHECKING:
    from .answer.lines import LinesRequest
    from .answer.verify import VerifyRequest
    from .call import Call, Result
    from .core import Engine

Name = Literal["search", "concepts", "lines", "verify"]
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Operation(Generic[R]):
    name: Name  # the contract's name
    parse: Callable[[object], R]  # the request from its JSON (schema_validation otherwise)
    runs: Callable[[Engine, Call, R | Mapping[str, object]], Result]  # the engine's method
    unsaved: bool  # whether it searches an editor's unsaved text (SPEC §11)
    # The contracts its results obey (engine/contracts/<result>.json): lines has two, the
    # §8 one of modes exact and regex and the §15 one of mode semantic.
    results: tuple[str, ...] = ()

    @property
    def result_contracts(self) -> tuple[str, ...]:
        return self.results or (f"{self.name}.result",)

    def run(self, engine: Engine, call: Call, request: object) -> Result:
        """Run the request as sent: the engine reads it (its method refuses, as `parse`
        does, what is not a request of this operation), so that a front that is handed
        a request never refuses it before the engine would."""
        return self.runs(engine, call, cast("R | Mapping[str, object]", request))


def _lines_request(request: object) -> LinesRequest:
    from .answer.lines import LinesRequest  # RE2: only when lines are searched

    return LinesRequest.from_json(request)


def _verify_request(request: object) -> VerifyRequest:
    from .answer.verify import VerifyRequest

    return VerifyRequest.from_json(request)


# Through the instance, so that a method replaced on the class (a test's fault) is the one run.
SEARCH: Operation[SearchRequest] = Operation(
    "search", SearchRequest.from_json, lambda e, c, r: e.search(c, r), unsaved=True
)
CONCEPTS: Operation[ConceptsRequest] = Operation(
    "concepts", ConceptsRequest.from_json, lambda e, c, r: e.concepts(c, r), unsaved=False
)
LINES: Operation[LinesRequest] = Operation(
    "lines",
    _lines_request,
    lambda e, c, r: e.lines(c, r),
    unsaved=True,
    results=("lines.result", "lines.semantic.result"),
)

VERIFY: Operation[VerifyRequest] = Operation(
    "verify", _verify_request, lambda e, c, r: e.verify(c, r), unsaved=True
)

# In the order the fronts list them (the language server advertises its commands so).
OPERATIONS: dict[str, Operation[Any]] = {op.name: op for op in (SEARCH, LINES, CONCEPTS, VERIFY)}


__all__ = ["CONCEPTS", "LINES", "OPERATIONS", "SEARCH", "VERIFY", "Name", "Operation"]
