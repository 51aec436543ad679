"""A small, safe expression evaluator for spec constraints (never `eval`).

Grammar: numbers, strings, True/False, factor names, arithmetic (+ - * / // % **), comparisons
(chained too), `and`/`or`/`not`, `in`/`not in` over tuple or list literals, parentheses, and the
functions min, max, abs. Anything else (attributes, calls to other names, subscripts, lambdas)
is rejected when the spec is loaded, so a constraint can never run code.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_FUNCS = {"min": min, "max": max, "abs": abs}


class ExprError(ValueError):
    pass


class Expr:
    """A parsed, validated expression; `names` are the free variables it uses."""

    def __init__(self, source: str):
        self.source = source
        try:
            self.tree = ast.parse(source, mode="eval")
        except SyntaxError as exc:
            raise ExprError(f"cannot parse {source!r}: {exc.msg}") from None
        self.names: set[str] = set()
        self._check(self.tree.body)

    def _check(self, node: ast.AST) -> None:
        match node:
            case ast.Constant(value=v) if isinstance(v, (int, float, str, bool)):
                return
            case ast.Name(id=name):
                if name not in _FUNCS:
                    self.names.add(name)
                return
            case ast.BinOp(left=a, op=op, right=b) if type(op) in _BIN:
                parts = [a, b]
            case ast.UnaryOp(op=op, operand=a) if type(op) in _UNARY:
                parts = [a]
            case ast.BoolOp(values=values):
                parts = values
            case ast.Compare(left=a, ops=ops, comparators=rest) if all(type(o) in _CMP for o in ops):
                parts = [a, *rest]
            case ast.Tuple(elts=elts) | ast.List(elts=elts):
                parts = elts
            case ast.Call(func=ast.Name(id=fn), args=args, keywords=[]) if fn in _FUNCS:
                parts = args
            case _:
                raise ExprError(f"{self.source!r}: '{ast.unparse(node)}' is not allowed in a constraint")
        for part in parts:
            self._check(part)

    def evaluate(self, env: dict[str, Any]) -> Any:
        missing = self.names - env.keys()
        if missing:
            raise ExprError(f"{self.source!r}: unknown name(s) {', '.join(sorted(missing))}")
        try:
            return _eval(self.tree.body, env)
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise ExprError(f"{self.source!r}: {exc}") from None


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    match node:
        case ast.Constant(value=v):
            return v
        case ast.Name(id=name):
            return env[name]
        case ast.BinOp(left=a, op=op, right=b):
            left, right = _eval(a, env), _eval(b, env)
            if isinstance(op, ast.Pow) and abs(right) > 64:
                raise ValueError("exponent too large")
            if isinstance(op, ast.Mult) and isinstance(left, (str, tuple)) or isinstance(right, (str, tuple)):
                raise ValueError("sequence repetition is not allowed")
            return _BIN[type(op)](left, right)
        case ast.UnaryOp(op=op, operand=a):
            return _UNARY[type(op)](_eval(a, env))
        case ast.BoolOp(op=ast.And(), values=values):
            result = True
            for v in values:
                result = _eval(v, env)
                if not result:
                    return result
            return result
        case ast.BoolOp(values=values):  # Or
            result = False
            for v in values:
                result = _eval(v, env)
                if result:
                    return result
            return result
        case ast.Compare(left=a, ops=ops, comparators=rest):
            left = _eval(a, env)
            for op, c in zip(ops, rest):
                right = _eval(c, env)
                if not _CMP[type(op)](left, right):
                    return False
                left = right
            return True
        case ast.Tuple(elts=elts) | ast.List(elts=elts):
            return tuple(_eval(e, env) for e in elts)
        case ast.Call(func=ast.Name(id=fn), args=args):
            return _FUNCS[fn](*(_eval(a, env) for a in args))
    raise ExprError(f"unsupported expression {ast.unparse(node)!r}")
