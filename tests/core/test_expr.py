import pytest
from hypothesis import given, strategies as st

from bisectk.expr import Expr, ExprError


@pytest.mark.parametrize("src,env,expected", [
    ("mma_warp < warps", {"mma_warp": 4, "warps": 6}, True),
    ("mma_warp < warps", {"mma_warp": 8, "warps": 6}, False),
    ("depth * 32 * 1024 <= 228 * 1024", {"depth": 7}, True),
    ("mode in ('a', 'b') and not flag", {"mode": "b", "flag": False}, True),
    ("1 < x <= 3", {"x": 3}, True),
    ("max(a, b) % 2 == 0", {"a": 3, "b": 4}, True),
])
def test_evaluates(src, env, expected):
    assert Expr(src).evaluate(env) is expected


@pytest.mark.parametrize("src", [
    "__import__('os').system('true')", "a.b", "x[0]", "(lambda: 1)()", "open('f')", "[i for i in x]",
    "f'{x}'", "x if y else z", "1 +",
])
def test_rejects_code(src):
    with pytest.raises(ExprError):
        Expr(src)


def test_unknown_name_and_runtime_errors_are_expr_errors():
    with pytest.raises(ExprError):
        Expr("a < b").evaluate({"a": 1})
    with pytest.raises(ExprError):
        Expr("a / b").evaluate({"a": 1, "b": 0})
    with pytest.raises(ExprError):
        Expr("2 ** x").evaluate({"x": 10**6})


@given(st.text(max_size=40))
def test_arbitrary_text_never_escapes(src):
    try:
        e = Expr(src)
    except ExprError:
        return
    try:
        e.evaluate({n: 1 for n in e.names})
    except ExprError:
        pass
