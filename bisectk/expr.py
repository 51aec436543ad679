"""A small, safe expression evaluator for spec constraints (never `eval`).

Grammar: numbers, strings, True/False (and true/false, as TOML and the spec's values write them,
unless a factor is so named), factor names, arithmetic (+ - * / // % **), comparisons
(chained too), `and`/`or`/`not`, `in`/`not in` over tuple or list literals, parentheses, and the
functions min, max, abs. Anything else (attributes, calls to other names, subscripts, lambdas)
is rejected when the spec is loaded, so a constraint can never run code.

Bounded, so no constraint can hang or exhaust bisectk: the source is at most MAX_SOURCE
characters, its tree at most MAX_NODES nodes and MAX_DEPTH deep (checked before anything
recurses over it); every integer an operation produces has at most MAX_INT_BITS bits, checked
*before* a power or product is computed, so `((9**64)**64)**64` is refused in microseconds; string
formatting and sequence repetition are refused; and an evaluation stops after MAX_EVAL_S.
Every problem is an ExprError, with the source clipped so the message stays one short line.
"""

from __future__ import annotations

import ast
import operator
import time
from typing import Any

MAX_SOURCE = 2000
MAX_NODES = 400
MAX_DEPTH = 40
MAX_INT_BITS = 16384  # more than any integer TOML can hand us (Python's 4,300-digit limit)
MAX_EVAL_S = 0.1

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_FUNCS = {"min": min, "max": max, "abs": abs}
_TOML_BOOLS = {"true": True, "false": False}    # `fast == true`: the spec's own spelling of a boolean


class ExprError(ValueError):
    pass


def clip(text: str, n: int = 80) -> str:
    """`text` as repr, cut to about n characters: error messages quote user input, and stay short."""
    r = repr(text)
    return r if len(r) <= n else r[:n] + "...'"


class Expr:
    """A parsed, validated expression; `names` are the free variables it uses."""

    def __init__(self, source: str):
        self.source = source
        if not isinstance(source, str):
            raise ExprError(f"a constraint must be a string, not {type(source).__name__}")
        if len(source) > MAX_SOURCE:
            raise ExprError(f"{clip(source)}: too long ({len(source):,} characters; at most {MAX_SOURCE:,})")
        try:
            self.tree = ast.parse(source, mode="eval")
        except SyntaxError as exc:
            raise ExprError(f"cannot parse {clip(source)}: {exc.msg}") from None
        except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
            raise ExprError(f"cannot parse {clip(source)}: {type(exc).__name__}: {str(exc)[:80]}") from None
        self._measure(self.tree.body)
        self.names: set[str] = set()
        self._check(self.tree.body)

    def _measure(self, root: ast.AST) -> None:
        """Size and depth, iteratively: the checks and the evaluator below recurse over the tree."""
        nodes, stack = 0, [(root, 1)]
        while stack:
            node, depth = stack.pop()
            nodes += 1
            if nodes > MAX_NODES:
                raise ExprError(f"{clip(self.source)}: too large (more than {MAX_NODES} parts)")
            if depth > MAX_DEPTH:
                raise ExprError(f"{clip(self.source)}: nested too deeply (more than {MAX_DEPTH} levels)")
            stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))

    def _check(self, node: ast.AST) -> None:
        match node:
            case ast.Constant(value=v) if isinstance(v, (int, float, str, bool)):
                return
            case ast.Name(id=name):
                if name in _FUNCS:
                    raise ExprError(f"{clip(self.source)}: {name!r} is a function; call it, e.g. {name}(a, b)")
                if name not in _TOML_BOOLS:
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
                raise ExprError(f"{clip(self.source)}: {clip(ast.unparse(node), 60)} is not allowed in a constraint")
        for part in parts:
            self._check(part)

    def evaluate(self, env: dict[str, Any]) -> Any:
        missing = self.names - env.keys()
        if missing:
            raise ExprError(f"{clip(self.source)}: unknown name(s) {', '.join(sorted(missing))[:120]}")
        try:
            return _Evaluator(env).eval(self.tree.body)
        except (ArithmeticError, TypeError, ValueError, RecursionError, MemoryError) as exc:
            raise ExprError(f"{clip(self.source)}: {str(exc)[:120] or type(exc).__name__}") from None


def _bits(v: Any) -> int:
    return abs(v).bit_length() if isinstance(v, int) else 0


class _Evaluator:
    def __init__(self, env: dict[str, Any]):
        self.env = env
        self.deadline = time.monotonic() + MAX_EVAL_S

    def eval(self, node: ast.AST) -> Any:
        if time.monotonic() > self.deadline:
            raise ExprError(f"took longer than {MAX_EVAL_S:g} s")
        match node:
            case ast.Constant(value=v):
                return v
            case ast.Name(id=name):
                return self.env[name] if name in self.env or name not in _TOML_BOOLS else _TOML_BOOLS[name]
            case ast.BinOp(left=a, op=op, right=b):
                return _bounded(self._binop(op, self.eval(a), self.eval(b)))
            case ast.UnaryOp(op=op, operand=a):
                return _UNARY[type(op)](self.eval(a))
            case ast.BoolOp(op=ast.And(), values=values):
                result = True
                for v in values:
                    result = self.eval(v)
                    if not result:
                        return result
                return result
            case ast.BoolOp(values=values):  # Or
                result = False
                for v in values:
                    result = self.eval(v)
                    if result:
                        return result
                return result
            case ast.Compare(left=a, ops=ops, comparators=rest):
                left = self.eval(a)
                for op, c in zip(ops, rest):
                    right = self.eval(c)
                    if not _CMP[type(op)](left, right):
                        return False
                    left = right
                return True
            case ast.Tuple(elts=elts) | ast.List(elts=elts):
                return tuple(self.eval(e) for e in elts)
            case ast.Call(func=ast.Name(id=fn), args=args):
                return _FUNCS[fn](*(self.eval(a) for a in args))
        raise ExprError(f"unsupported expression {clip(ast.unparse(node), 60)}")

    @staticmethod
    def _binop(op: ast.operator, left: Any, right: Any) -> Any:
        if isinstance(left, (str, tuple)) or isinstance(right, (str, tuple)):
            if isinstance(op, ast.Mult):
                raise ValueError("sequence repetition is not allowed")
            if isinstance(op, ast.Mod):
                raise ValueError("string formatting is not allowed")
        if isinstance(op, ast.Pow) and isinstance(right, (int, float)) and not isinstance(right, bool):
            if isinstance(left, int) and isinstance(right, int) and right > 0 \
                    and max(_bits(left) - 1, 1) * right > MAX_INT_BITS and abs(left) > 1:
                raise ValueError(f"result too large (over {MAX_INT_BITS} bits)")
            if abs(right) > MAX_INT_BITS:
                if not (isinstance(left, (int, float)) and abs(left) in (0, 1)):
                    raise ValueError("exponent too large")
        if isinstance(op, ast.Mult) and _bits(left) + _bits(right) > MAX_INT_BITS + 1:
            raise ValueError(f"result too large (over {MAX_INT_BITS} bits)")
        return _BIN[type(op)](left, right)


def _bounded(value: Any) -> Any:
    if isinstance(value, int) and _bits(value) > MAX_INT_BITS:
        raise ValueError(f"result too large (over {MAX_INT_BITS} bits)")
    if isinstance(value, complex):
        raise ValueError("the result is not a real number")
    return value
