"""The engine's module-level state is the short list docs/architecture.md ("Module state")
names (issue 50): state derived from an index lives with that index, a request's with the
request, and what a whole process shares is listed here and there with its reason.

Found from the code itself: a module-level name is state when a function of its module
mutates it (`global`, an item or attribute stored into it, a mutating method called on it),
and a memo decorator (`functools.cache`, `lru_cache`) on a function that takes arguments is
a cache of its inputs. A memo of a function without arguments is a lazy constant: computed
once, the same for every input.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENGINE = REPO / "engine"

# module: {name: "cache" | "state"}; each named in docs/architecture.md's "Module state".
ALLOWED = {
    "engine/text/terms.py": {"_WORDS": "cache", "_STEMMERS": "state"},
    "engine/capture/ignore.py": {"_COMPILED": "cache"},
    "engine/semantic/loading.py": {"_loaded": "cache", "_loading": "state"},
    "engine/semantic/embedding.py": {"_GATE": "state"},
    "engine/store/store.py": {"refused": "state"},
}
MAX_CACHES = 3  # the bound

MUTATORS = {
    "add",
    "append",
    "clear",
    "discard",
    "extend",
    "insert",
    "move_to_end",
    "pop",
    "popitem",
    "remove",
    "setdefault",
    "update",
}
MEMOS = {"cache", "lru_cache", "functools.cache", "functools.lru_cache"}


def _root_name(node: ast.AST) -> str | None:
    """The name an expression like `x`, `x.a`, `x[k]` or `x.a[k].b` starts from."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _memo_name(decorator: ast.expr) -> str:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target)


def module_state(path: Path) -> dict[str, str]:
    """{name: "cache" | "state"} of one module, as the docstring above defines them."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top: set[str] = set()
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            top.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
        elif isinstance(node, ast.FunctionDef):
            memo = any(_memo_name(d) in MEMOS for d in node.decorator_list)
            arguments = node.args.args or node.args.kwonlyargs or node.args.vararg
            if memo and arguments:
                found[node.name] = "cache"
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        local = {a.arg for a in func.args.args + func.args.kwonlyargs}
        for node in ast.walk(func):
            if isinstance(node, ast.Global):
                found.update({n: found.get(n, "state") for n in node.names})
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        local.add(t.id)
                    elif isinstance(t, ast.Attribute | ast.Subscript):
                        name = _root_name(t)
                        if name in top and name not in local:
                            found.setdefault(name, "state")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in MUTATORS
            ):
                name = _root_name(node.func.value)
                if name in top and name not in local:
                    found.setdefault(name, "state")
    return found


def test_the_engine_keeps_only_the_listed_module_state() -> None:
    found = {}
    for path in sorted(ENGINE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        state = module_state(path)
        for name, how in ALLOWED.get(rel, {}).items():
            if name in state:
                state[name] = how  # the list says which of the two it is
        if state:
            found[rel] = state
    assert found == ALLOWED  # new module state needs its reason in docs/architecture.md
    caches = [name for names in ALLOWED.values() for name, how in names.items() if how == "cache"]
    assert len(caches) <= MAX_CACHES, caches


def test_each_piece_of_module_state_is_named_in_the_architecture() -> None:
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = doc.split("## Module state", 1)[1].split("\n## ", 1)[0]
    for module, names in ALLOWED.items():
        for name in names:
            assert f"`{module}`'s `{name}`" in listed, (module, name)


def test_the_scanner_sees_each_kind_of_module_state(tmp_path: Path) -> None:
    """What the scan above would miss, it would pass: each kind is found in a made module."""
    made = tmp_path / "made.py"
    made.write_text(
        "import functools\n"
        "A = {}\nB = []\nC = None\nD = Thing()\nE = {}\nF = {}\n"
        "def f(x):\n    A[x] = 1\n    B.append(x)\n    D.count = 2\n"
        "def g():\n    global C\n    C = 3\n"
        "def h(E):\n    E[1] = 2\n"  # a parameter, not the module's E
        "@functools.lru_cache(maxsize=8)\ndef memo(x):\n    return x\n"
        "@functools.cache\ndef constant():\n    return F\n",
        encoding="utf-8",
    )
    state = module_state(made)
    assert state == {"A": "state", "B": "state", "C": "state", "D": "state", "memo": "cache"}
