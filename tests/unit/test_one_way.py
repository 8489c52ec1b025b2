"""One way per job, so that no second one grows back: user text is made safe and cut by
``core.visible`` alone, time text is parsed by ``core.times`` alone, and no function of
the package is only another name for one."""

import ast
import functools
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "operator" / "jobarchive"
VISIBLE = PACKAGE / "core" / "visible.py"
TIMES = PACKAGE / "core" / "times.py"
# What making text safe by hand takes: asking a character's category or printability,
# or Python's escapes.
ESCAPING = {"category", "isprintable", "unicode_escape", "backslashreplace"}
# The names a second text-safety function went by.
SECOND_NAMES = {"quoted", "escaped", "printable"}
# What a cut was marked with before there was one mark.
MARKS = ("…", "...")


@functools.cache
def modules() -> dict[pathlib.Path, ast.Module]:
    return {path: ast.parse(path.read_text()) for path in sorted(PACKAGE.rglob("*.py"))}


def where(path: pathlib.Path, node: ast.AST) -> str:
    return f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', 0)}"


def names_used(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    found: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found.append((node, node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node, node.value))
    return found


def test_only_core_times_parses_time_text() -> None:
    found = [
        where(path, node)
        for path, tree in modules().items()
        for node, name in names_used(tree)
        if name == "fromisoformat" and path != TIMES
    ]
    assert found == [], f"parse with core.times.from_rfc3339 or timestamp: {found}"


def test_only_core_visible_escapes_user_text() -> None:
    # csvsafe asks categories to find where a cell's text begins, and kubeconfig to
    # refuse a server's address: neither escapes text.
    allowed = {VISIBLE, PACKAGE / "core" / "csvsafe.py", PACKAGE / "cli" / "kubeconfig.py"}
    found = [
        where(path, node)
        for path, tree in modules().items()
        for node, name in names_used(tree)
        if name in ESCAPING and path not in allowed
    ]
    assert found == [], f"show user text with core.visible.visible: {found}"


def test_one_function_is_named_shown_and_none_quoted() -> None:
    functions = [
        (node.name, where(path, node))
        for path, tree in modules().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    assert len([place for name, place in functions if name == "shown"]) <= 1
    assert [place for name, place in functions if name in SECOND_NAMES] == []


def sliced(node: ast.AST) -> bool:
    """Whether an expression is, or wraps, a slice of something: text cut short."""
    return any(
        isinstance(inner, ast.Subscript) and isinstance(inner.slice, ast.Slice)
        for inner in ast.walk(node)
    )


def marked(node: ast.AST | None) -> bool:
    """Whether an expression is, or may be, text that starts with a cut mark."""
    return node is not None and any(
        isinstance(inner, ast.Constant)
        and isinstance(inner.value, str)
        and inner.value.lstrip().startswith(MARKS)
        for inner in ast.walk(node)
    )


def test_no_text_is_cut_with_a_mark_of_its_own() -> None:
    found = []
    for path, tree in modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                pairs = [(node.left, node.right)]
            elif isinstance(node, ast.JoinedStr):
                pairs = list(zip(node.values, node.values[1:], strict=False))
            else:
                continue
            if any(sliced(cut) and marked(mark) for cut, mark in pairs):
                found.append(where(path, node))
    assert found == [], f"cut with visible(text, limit=...) or cutting.clip: {found}"


def forwards(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a function only passes its parameters, as they are, to another named one."""
    body = [
        statement
        for statement in function.body
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
    ]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    call = body[0].value
    if isinstance(call, ast.Await):
        call = call.value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name | ast.Attribute):
        return False
    given = [arg.arg for arg in function.args.args]
    passed = [arg.id if isinstance(arg, ast.Name) else None for arg in call.args]
    return passed == given and not call.keywords


def test_no_function_is_only_another_name_for_one() -> None:
    found = [
        where(path, node)
        for path, tree in modules().items()
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and forwards(node)
    ]
    assert found == [], f"call the function by its own name: {found}"
