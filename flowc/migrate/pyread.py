"""Static reading of Python source with ``ast``: constants, variables, calls, spans.

Nothing here imports or runs the user's code. Values are resolved through
assignments as Python resolves names where they are read (module statements in order, each
function a scope of its own), including dicts and lists built up by ``d[k] = v``,
``xs.append(v)`` and ``.update`` / ``.extend``; literals, string concatenation, lists, tuples
and dicts; anything else is "not static".

>>> import ast
>>> mod = PyModule.parse("<t>", "x = 'a' + 'b'\\ny = [x, 'c']\\n")
>>> mod.const(ast.parse("y", mode="eval").body)
['ab', 'c']
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from typing import Any

from flowc.migrate.pyvalues import NotStatic as NotStatic
from flowc.migrate.pyvalues import Values
from flowc.migrate.pyvalues import callee as callee
from flowc.source import SourceFile, Span


def kwarg(call: ast.Call, key: str, position: int | None = None) -> ast.expr | None:
    """The expression passed as ``key=`` (or at ``position``), if any."""
    for kw in call.keywords:
        if kw.arg == key:
            return kw.value
    if position is not None and len(call.args) > position:
        arg = call.args[position]
        return None if isinstance(arg, ast.Starred) else arg
    return None


Pos = tuple[int, int]
_LAST: Pos = (10**9, 0)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
#: a binding whose value is not an expression migrate can follow (a loop variable, an import,
#: a parameter, ``x += 1``, a subscript-built dict mutated in a way not read)
UNKNOWN: ast.expr = ast.Constant(value=Ellipsis)
_NOT_KNOWN = object()


class _Scope:
    """One Python scope (the module, a function, a lambda, a class body): the bindings of
    each name in source order, and the mutations (``d[k] = v``, ``xs.append(v)``) of each."""

    def __init__(self, node: ast.AST, parent: _Scope | None) -> None:
        self.node = node
        self.parent = parent
        self.bindings: dict[
            str, list[tuple[Pos, ast.expr | ast.FunctionDef | ast.AsyncFunctionDef]]
        ] = {}
        self.mutations: dict[str, list[tuple[Pos, str, ast.expr | None, ast.expr | None]]] = {}
        #: names bound inside a branch or a loop of this scope (their value depends on the run)
        self.shaky: set[str] = set()
        #: (name, position of a binding) -> the `if` whose unknown test decides whether that
        #: binding or another one of the name holds
        self.undecided: dict[tuple[str, Pos], ast.If] = {}

    def bind(
        self, name: str, at: Pos, value: ast.expr | ast.FunctionDef | ast.AsyncFunctionDef
    ) -> None:
        self.bindings.setdefault(name, []).append((at, value))

    def mutate(
        self, name: str, at: Pos, kind: str, key: ast.expr | None, value: ast.expr | None
    ) -> None:
        self.mutations.setdefault(name, []).append((at, kind, key, value))


def _end(node: ast.AST) -> Pos:
    line: int = getattr(node, "end_lineno", None) or getattr(node, "lineno", 0) or 0
    col: int = getattr(node, "end_col_offset", None) or getattr(node, "col_offset", 0) or 0
    return (line, col)


def _start(node: ast.AST) -> Pos:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


_MUTATORS = ("append", "extend", "update", "insert", "pop", "remove", "clear", "setdefault")


class _Binder(ast.NodeVisitor):
    """Walks a module once: every scope, every binding and mutation, and the scope of
    every name that is read."""

    def __init__(self, tree: ast.Module) -> None:
        self.module = _Scope(tree, None)
        self.scope = self.module
        self.scope_of: dict[int, _Scope] = {}
        #: inside a loop or a branch of the current scope: a mutation may run 0 or n times
        self.unsure = 0
        #: module-level `from M import X as Y`: Y -> (M with its leading dots, X)
        self.imported: dict[str, tuple[str, str]] = {}
        self.visit(tree)

    def mutate(
        self, name: str, at: Pos, kind: str, key: ast.expr | None, value: ast.expr | None
    ) -> None:
        self.scope.mutate(name, at, "?" if self.unsure else kind, key, value)

    def _unsure(self, stmts: list[ast.stmt]) -> dict[str, list[Pos]]:
        """Visit ``stmts`` as code that may not run; the names they bind, with where."""
        before = {k: len(v) for k, v in self.scope.bindings.items()}
        self.unsure += 1
        for st in stmts:
            self.visit(st)
        self.unsure -= 1
        new = {
            k: [pos for pos, _ in v[before.get(k, 0) :]]
            for k, v in self.scope.bindings.items()
            if len(v) > before.get(k, 0)
        }
        self.scope.shaky |= set(new)
        return new

    def _known(self, test: ast.expr) -> bool | None:
        """The truth of an ``if`` test that is known in the file: a literal, a name of this
        scope bound once to a literal outside any branch or loop (``USE_API = True``),
        ``__name__`` at module level (``"__main__"``: the file is run as a script), and
        ``not`` / ``and`` / ``or`` / ``==`` / ``!=`` / ``is`` / ``is not`` of those."""
        value = self._literal(test)
        return bool(value) if value is not _NOT_KNOWN else None

    def _literal(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            found = self.scope.bindings.get(node.id)
            if node.id == "__name__" and not found and self.scope is self.module:
                return "__main__"  # the file is run as a script (it runs its chat)
            if not found or node.id in self.scope.shaky or node.id in self.scope.mutations:
                return _NOT_KNOWN
            value = found[-1][1]
            return (
                value.value
                if isinstance(value, ast.Constant) and value is not UNKNOWN
                else _NOT_KNOWN
            )
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self._literal(node.operand)
            return _NOT_KNOWN if inner is _NOT_KNOWN else not inner
        if isinstance(node, ast.BoolOp):
            values = [self._literal(v) for v in node.values]
            if any(v is _NOT_KNOWN for v in values):
                return _NOT_KNOWN
            if isinstance(node.op, ast.And):
                return next((v for v in values if not v), values[-1])
            return next((v for v in values if v), values[-1])
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self._literal(node.left), self._literal(node.comparators[0])
            if left is _NOT_KNOWN or right is _NOT_KNOWN:
                return _NOT_KNOWN
            op = node.ops[0]
            if isinstance(op, ast.Eq):
                return left == right
            if isinstance(op, ast.NotEq):
                return left != right
            if isinstance(op, ast.Is):
                return left is right
            if isinstance(op, ast.IsNot):
                return left is not right
        return _NOT_KNOWN

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        known = self._known(node.test)
        if known is not None:
            # Python runs one branch: only its bindings hold; the other is read in a scope
            # of its own so that its names stay readable but bind nothing here
            runs, dead = (node.body, node.orelse) if known else (node.orelse, node.body)
            for st in runs:
                self.visit(st)
            if dead:
                outer = self.scope
                self.scope = _Scope(node, outer)
                self._unsure(dead)
                self.scope = outer
            return
        before = set(self.scope.bindings)
        body = self._unsure(node.body)
        orelse = self._unsure(node.orelse)
        for name in set(body) | set(orelse):
            if (name in body and name in orelse) or name in before:
                for pos in [*body.get(name, []), *orelse.get(name, [])]:
                    self.scope.undecided.setdefault((name, pos), node)

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self._unsure([*node.body, *node.orelse])

    def visit_Try(self, node: ast.Try) -> None:
        for st in node.body:
            self.visit(st)
        for h in node.handlers:
            self.unsure += 1
            self.visit(h)
            self.unsure -= 1
        self._unsure(node.orelse)
        for st in node.finalbody:
            self.visit(st)

    def visit_Match(self, node: ast.Match) -> None:
        self.visit(node.subject)
        for case in node.cases:
            self._unsure(case.body)

    def _target(self, target: ast.expr, value: ast.expr | None, at: Pos) -> None:
        if isinstance(target, ast.Name):
            self.scope.bind(target.id, at, value if value is not None else UNKNOWN)
        elif isinstance(target, ast.Tuple | ast.List):
            values = value.elts if isinstance(value, ast.Tuple | ast.List) else None
            same = (
                values is not None
                and len(values) == len(target.elts)
                and not any(isinstance(e, ast.Starred) for e in [*target.elts, *(values or [])])
            )
            for i, t in enumerate(target.elts):
                self._target(
                    t.value if isinstance(t, ast.Starred) else t,
                    values[i] if same and values is not None else None,
                    at,
                )
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            key = target.slice if not isinstance(target.slice, ast.Slice) else None
            self.mutate(target.value.id, at, "setitem" if key is not None else "?", key, value)
        elif isinstance(target, ast.Starred):
            self._target(target.value, None, at)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for t in node.targets:
            self.visit(t)
            self._target(t, node.value, _end(node))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._target(node.target, node.value, _end(node))
        self.visit(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.generic_visit(node)
        if isinstance(node.target, ast.Name):
            self.scope.bind(node.target.id, _end(node), UNKNOWN)
        elif isinstance(node.target, ast.Subscript) and isinstance(node.target.value, ast.Name):
            self.mutate(node.target.value.id, _end(node), "?", None, None)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.generic_visit(node)
        self.scope.bind(node.target.id, _end(node), node.value)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            if isinstance(t, ast.Name):
                self.scope.bind(t.id, _end(node), UNKNOWN)
            elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                self.mutate(t.value.id, _end(node), "?", None, None)
        self.generic_visit(node)

    def _loop_target(self, target: ast.expr, at: Pos) -> None:
        self._target(target, None, at)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self._loop_target(node.target, _start(node))
        self._unsure([*node.body, *node.orelse])

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._loop_target(item.optional_vars, _end(item.context_expr))
        for st in node.body:
            self.visit(st)

    visit_AsyncWith = visit_With

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for a in node.names:
            name = a.asname or a.name.split(".")[0]
            if name != "*":
                self.scope.bind(name, _end(node), UNKNOWN)
                if isinstance(node, ast.ImportFrom) and self.scope is self.module:
                    self.imported[name] = ("." * node.level + (node.module or ""), a.name)

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.scope.bind(node.name, _start(node), UNKNOWN)
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        call = node.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in _MUTATORS
        ):
            arg = call.args[0] if len(call.args) == 1 and not call.keywords else None
            obj = call.func.value
            known = call.func.attr in ("append", "extend", "update") and arg is not None
            if isinstance(obj, ast.Name):  # xs.append(v)
                self.mutate(obj.id, _end(node), call.func.attr if known else "?", None, arg)
            elif (
                isinstance(obj, ast.Subscript)
                and isinstance(obj.value, ast.Name)
                and not isinstance(obj.slice, ast.Slice)
            ):  # d[k].append(v)
                self.mutate(
                    obj.value.id,
                    _end(node),
                    "item_" + call.func.attr if known else "?",
                    obj.slice,
                    arg,
                )
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        for d in getattr(node, "decorator_list", []):
            self.visit(d)
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.visit(default)
        if not isinstance(node, ast.Lambda):
            self.scope.bind(node.name, _end(node), node)
        outer, unsure = self.scope, self.unsure
        self.scope, self.unsure = _Scope(node, outer), 0
        at = _start(node)
        for a in [
            *node.args.posonlyargs,
            *node.args.args,
            *node.args.kwonlyargs,
            *([node.args.vararg] if node.args.vararg else []),
            *([node.args.kwarg] if node.args.kwarg else []),
        ]:
            self.scope.bind(a.arg, at, UNKNOWN)
        body = [node.body] if isinstance(node, ast.Lambda) else node.body
        for st in body:
            self.visit(st)
        self.scope, self.unsure = outer, unsure

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function
    visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for d in [*node.decorator_list, *node.bases]:
            self.visit(d)
        self.scope.bind(node.name, _end(node), UNKNOWN)
        outer = self.scope
        self.scope = _Scope(node, outer)
        for st in node.body:
            self.visit(st)
        self.scope = outer

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        outer = self.scope
        self.scope = _Scope(node, outer)
        for gen in node.generators:
            self.visit(gen.iter)
            self._target(gen.target, None, _start(node))
            for cond in gen.ifs:
                self.visit(cond)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self.visit(getattr(node, part))
        self.scope = outer

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_GeneratorExp = _comprehension
    visit_DictComp = _comprehension

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:  # a global written in a function: not followed
            self.scope.bind(name, _start(node), UNKNOWN)

    visit_Nonlocal = visit_Global

    def visit_Name(self, node: ast.Name) -> None:
        self.scope_of[id(node)] = self.scope


class PyModule(Values):
    """A parsed Python file; names are resolved as Python resolves them where they are
    read: the last binding before that point in the same scope (module statements in
    order, each function its own scope), then the enclosing scopes; a function body reads
    the module's names as they are when the chat runs (the :attr:`horizon`, by default the
    end of the file)."""

    def __init__(self, source: SourceFile, tree: ast.Module):
        self.source = source
        self.tree = tree
        self._binder = _Binder(tree)
        #: where the module's names are read from inside a function body (when it is called)
        self.horizon: Pos | None = None
        #: names read (by a reader, through :meth:`binding`) whose value an ``if`` with an
        #: unknown test decides: name -> (that ``if``, the binding used); a reader reports them
        self.undecided: dict[str, tuple[ast.If, Pos]] = {}
        self.too_large = {}  # (:attr:`Values.too_large`)
        self._parents: dict[int, ast.AST] | None = None
        #: every function definition, by name (the first of a name)
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.setdefault(fn.name, fn)

    # ── names ──

    def _scope_chain(self, node: ast.Name) -> list[_Scope]:
        scope: _Scope | None = self._binder.scope_of.get(id(node), self._binder.module)
        out: list[_Scope] = []
        while scope is not None:
            if not isinstance(scope.node, ast.ClassDef) or not out:  # class bodies do not nest
                out.append(scope)
            scope = scope.parent
        return out

    def binding(self, node: ast.Name) -> ast.expr | ast.FunctionDef | ast.AsyncFunctionDef | None:
        """What ``node`` holds where it is read: an expression, a ``def``, :data:`UNKNOWN`,
        or None when the name is bound nowhere in reach (a builtin or a later cell)."""
        chain = self._scope_chain(node)
        # a name that is not part of the file (built by a reader) reads the module's end
        at = _start(node) if id(node) in self._binder.scope_of else (self.horizon or _LAST)
        for i, scope in enumerate(chain):
            found = scope.bindings.get(node.id)
            if not found:
                continue
            if all(isinstance(s.node, _COMPREHENSIONS) for s in chain[:i]):
                limit = at  # read now: the same scope, or a comprehension running in it
            elif isinstance(scope.node, ast.Module):
                limit = self.horizon or _LAST  # a function body reads module names when it runs
            else:
                limit = _LAST
            before = [(pos, v) for pos, v in found if pos <= limit]
            if not before:
                return UNKNOWN if limit == at and not isinstance(scope.node, ast.Module) else None
            pos, value = before[-1]
            branch = scope.undecided.get((node.id, pos))
            if branch is not None:
                self.undecided.setdefault(node.id, (branch, pos))
            if isinstance(value, ast.expr) and scope.mutations.get(node.id):
                value = self._mutated(
                    value, pos, [m for m in scope.mutations[node.id] if pos < m[0] <= limit]
                )
            return value
        return None

    def _mutated(
        self,
        value: ast.expr,
        since: Pos,
        changes: list[tuple[Pos, str, ast.expr | None, ast.expr | None]],
    ) -> ast.expr:
        """A dict or list literal with the subscript writes and appends made to it after
        ``since``; :data:`UNKNOWN` when a change cannot be followed."""
        if not changes:
            return value
        base = self.deref(value)
        if (
            isinstance(base, ast.Call)
            and isinstance(base.func, ast.Name)
            and not base.args
            and not base.keywords
            and base.func.id in ("dict", "list")
        ):
            base = ast.copy_location(
                ast.Dict(keys=[], values=[])
                if base.func.id == "dict"
                else ast.List(elts=[], ctx=ast.Load()),
                base,
            )
        if isinstance(base, ast.Dict):
            keys: list[ast.expr | None] = list(base.keys)
            values = list(base.values)
            for _, kind, key, item in changes:
                same = [
                    i
                    for i, k in enumerate(keys)
                    if k is not None and key is not None and ast.dump(k) == ast.dump(key)
                ]
                if kind == "setitem" and key is not None and item is not None:
                    if same:
                        values[same[-1]] = item
                    else:
                        keys.append(key)
                        values.append(item)
                elif kind in ("item_append", "item_extend") and same and item is not None:
                    old = self.deref(values[same[-1]])
                    if not isinstance(old, ast.List):
                        return UNKNOWN
                    extra = (
                        item
                        if kind == "item_append"
                        else ast.copy_location(ast.Starred(value=item, ctx=ast.Load()), item)
                    )
                    values[same[-1]] = ast.copy_location(
                        ast.List(elts=[*old.elts, extra], ctx=ast.Load()), old
                    )
                elif (
                    kind == "update" and item is not None and isinstance(self.deref(item), ast.Dict)
                ):
                    other = self.deref(item)
                    assert isinstance(other, ast.Dict)
                    keys += other.keys
                    values += other.values
                else:
                    return UNKNOWN
            return ast.copy_location(ast.Dict(keys=keys, values=values), base)
        if isinstance(base, ast.List):
            elts = list(base.elts)
            for _, kind, _key, item in changes:
                if kind == "append" and item is not None:
                    elts.append(item)
                elif kind == "extend" and item is not None:
                    elts.append(ast.copy_location(ast.Starred(value=item, ctx=ast.Load()), item))
                else:
                    return UNKNOWN
            return ast.copy_location(ast.List(elts=elts, ctx=ast.Load()), base)
        return UNKNOWN

    def imported_from(self, node: ast.expr) -> tuple[str, str] | None:
        """``(module, name)`` when ``node`` is a name bound by ``from module import name``."""
        if isinstance(node, ast.Name) and self.binding(node) is UNKNOWN:
            return self._binder.imported.get(node.id)
        return None

    def decorated(
        self, method: str
    ) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.Call, ast.expr]]:
        """Each function of the module decorated with a call of ``OBJECT.method(...)``:
        the function, the decorator's call and ``OBJECT`` (e.g. ``@agent.register_for_llm(
        description=...)``)."""
        for fn in self.functions.values():
            for deco in fn.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Attribute)
                    and deco.func.attr == method
                ):
                    yield fn, deco, deco.func.value

    def function_of(self, node: ast.expr | None) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The ``def`` a name refers to where it is read (through variables), if any."""
        for _ in range(20):
            if not isinstance(node, ast.Name):
                return None
            value = self.binding(node)
            if isinstance(value, ast.FunctionDef | ast.AsyncFunctionDef):
                return value
            node = value if isinstance(value, ast.Name) else None
        return None

    def var_of(self, value: ast.expr) -> str | None:
        """The name a value is assigned to (``x = value``), if any."""
        for scope in self._scopes():
            for name, found in scope.bindings.items():
                if any(v is value for _, v in found):
                    return name
        return None

    def _scopes(self) -> list[_Scope]:
        seen: dict[int, _Scope] = {id(self._binder.module): self._binder.module}
        for scope in self._binder.scope_of.values():
            while scope is not None and id(scope) not in seen:
                seen[id(scope)] = scope
                scope = scope.parent  # type: ignore[assignment]
        return list(seen.values())

    @classmethod
    def parse(cls, filename: str, text: str) -> PyModule:
        """Parse ``text``; raises ``SyntaxError`` (and ``RecursionError``/``ValueError``).
        An imported class under another name (``from autogen import GroupChat as GC``)
        is read under its own (:func:`_unalias`)."""
        tree = ast.parse(text, filename=filename)
        _unalias(tree)
        return cls(SourceFile(filename, text), tree)

    def defined_here(self, call: ast.Call) -> bool:
        """Whether what ``call`` calls is a plain function or a class without bases that
        the file itself defines at its top (``class GroupChat: ...``): never a class of
        AG2 or AutoGen, whatever its name."""
        if not isinstance(call.func, ast.Name):
            return False
        name = call.func.id
        return any(
            (isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef) and st.name == name)
            or (isinstance(st, ast.ClassDef) and st.name == name and not st.bases)
            for st in self.tree.body
        )

    # ── spans ──

    def _offset(self, line: int, col_bytes: int) -> int:
        starts = self.source.line_starts
        if line < 1 or line > len(starts):
            return len(self.source.text)
        text = self.source.line_text(line)
        col = len(text.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))
        return starts[line - 1] + col

    def span(self, node: ast.AST) -> Span:
        """The span of an ``ast`` node in the file."""
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        start = self._offset(line, col)
        end = self._offset(end_line, end_col) if end_col is not None else start + 1
        return self.source.span(start, max(end, start))

    # ── values ──

    def deref(self, node: ast.expr, depth: int = 0) -> ast.expr:
        """Follow ``name`` -> the expression it holds where it is read (a few hops); a name
        bound to something that cannot be followed stays a name."""
        while isinstance(node, ast.Name) and depth < 20:
            value = self.binding(node)
            if not isinstance(value, ast.expr) or value is UNKNOWN:
                break
            node = value
            depth += 1
        return node

    def _enum_member(self, node: ast.expr) -> tuple[str, ast.expr] | None:
        """``Stage.DRAFTING.value`` / ``.name`` for ``class Stage(Enum)`` (or ``str, Enum``,
        ``StrEnum``, ``IntEnum``) written at the top of this file and never rebound: the
        member's name and the expression assigned to it in the class body."""
        if not (
            isinstance(node, ast.Attribute)
            and node.attr in ("value", "name")
            and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name)
        ):
            return None
        cls_name, member = node.value.value.id, node.value.attr
        classes = [
            st for st in self.tree.body if isinstance(st, ast.ClassDef) and st.name == cls_name
        ]
        if len(classes) != 1 or len(self._binder.module.bindings.get(cls_name, [])) != 1:
            return None
        bases = {
            b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
            for b in classes[0].bases
        }
        if not bases & {"Enum", "StrEnum", "IntEnum"}:
            return None
        for st in classes[0].body:
            if (
                isinstance(st, ast.Assign)
                and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name)
                and st.targets[0].id == member
            ):
                return member, st.value
        return None

    # ── loops ──

    def _parent(self, node: ast.AST) -> ast.AST | None:
        if self._parents is None:
            self._parents = {}
            for parent in ast.walk(self.tree):
                for child in ast.iter_child_nodes(parent):
                    self._parents[id(child)] = parent
        return self._parents.get(id(node))

    def enclosing_loops(self, node: ast.AST) -> list[ast.For | ast.AsyncFor]:
        """The ``for`` loops ``node`` sits in, innermost first, within its own function."""
        out: list[ast.For | ast.AsyncFor] = []
        parent = self._parent(node)
        while parent is not None and not isinstance(
            parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
        ):
            if isinstance(parent, ast.For | ast.AsyncFor):
                out.append(parent)
            parent = self._parent(parent)
        return out

    def unrolled(self, call: ast.Call) -> tuple[list[ast.Call], ast.For | ast.AsyncFor | None]:
        """``call`` once per round of the ``for`` loops around it that it reads the variable of,
        as Python runs them: ``for agent in [a, b]: f(agent=agent)`` -> ``f(agent=a)``,
        ``f(agent=b)`` (the element expressions themselves, so names in them resolve where the
        list is written). Unrolled only over a list or tuple read statically (also through a
        name), with a name or a tuple of names as the loop variable, the call's statement
        directly in the loop body and no ``break``/``continue`` in it; otherwise ``([], loop)``
        names the loop that could not be unrolled. Outside loops: ``([call], None)``."""
        copies: list[ast.Call] = [call]
        inner: ast.AST = call
        while not isinstance(inner, ast.stmt):
            up = self._parent(inner)
            if up is None:
                return copies, None
            inner = up
        for loop in self.enclosing_loops(call):
            names = _target_names(loop.target)
            used = {
                nd.id
                for c in copies
                for nd in ast.walk(c)
                if isinstance(nd, ast.Name) and isinstance(nd.ctx, ast.Load)
            }
            if names is not None and not (set(names) & used):
                inner = loop
                continue
            elements = self.elements(loop.iter)
            direct = inner in loop.body and not any(
                isinstance(nd, ast.Break | ast.Continue) for st in loop.body for nd in ast.walk(st)
            )
            if names is None or elements is None or not direct:
                return [], loop
            rounds: list[dict[str, ast.expr]] = []
            for e in elements:
                if len(names) == 1 and not isinstance(loop.target, ast.Tuple | ast.List):
                    rounds.append({names[0]: e})
                    continue
                parts = self.elements(e)
                if parts is None or len(parts) != len(names):
                    return [], loop
                rounds.append(dict(zip(names, parts, strict=True)))
            copies = [_substitute(c, r) for r in rounds for c in copies]
            inner = loop
        return copies, None

    def calls(self) -> Iterator[ast.Call]:
        """Every call in the file, in source order."""
        found = [nd for nd in ast.walk(self.tree) if isinstance(nd, ast.Call)]
        yield from sorted(found, key=lambda c: (c.lineno, c.col_offset))

    def docstring(self, fn: ast.expr | str) -> str | None:
        found = self.functions.get(fn) if isinstance(fn, str) else self.function_of(fn)
        return ast.get_docstring(found) if found is not None else None


def _unalias(tree: ast.Module) -> None:
    """Rewrite ``from M import X as Y`` as ``from M import X``, and every ``Y`` read as
    ``X``: the readers know a class by its name, and Python binds the alias to that class.
    Only an alias bound nowhere else in the file, to a name the file uses nowhere, is
    rewritten (the file then means the same)."""
    aliases: dict[str, list[ast.alias]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.asname and a.asname != a.name and a.name != "*":
                    aliases.setdefault(a.asname, []).append(a)
    if not aliases:
        return
    bound: dict[str, int] = {}
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
            if not isinstance(node.ctx, ast.Load):
                bound[node.id] = bound.get(node.id, 0) + 1
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            used.add(node.name)
            bound[node.name] = bound.get(node.name, 0) + 1
        elif isinstance(node, ast.arg):
            used.add(node.arg)
            bound[node.arg] = bound.get(node.arg, 0) + 1
        elif isinstance(node, ast.alias):
            name = node.asname or node.name.split(".")[0]
            used.add(name)
            bound[name] = bound.get(name, 0) + 1
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            used.add(node.name)
            bound[node.name] = bound.get(node.name, 0) + 1
        elif isinstance(node, ast.Global | ast.Nonlocal):
            used.update(node.names)
            for name in node.names:
                bound[name] = bound.get(name, 0) + 2  # never rewritten
    renamed: dict[str, str] = {}
    for alias_name, found in aliases.items():
        original = found[0].name
        if len(found) == 1 and bound.get(alias_name) == 1 and original not in used:
            renamed[alias_name] = original
            found[0].asname = None
            used.add(original)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in renamed:
            node.id = renamed[node.id]


def _target_names(target: ast.expr) -> list[str] | None:
    """The names a ``for`` target binds (a name, or a flat tuple/list of names)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List) and all(
        isinstance(e, ast.Name) for e in target.elts
    ):
        return [e.id for e in target.elts if isinstance(e, ast.Name)]
    return None


def _substitute(node: ast.Call, values: dict[str, ast.expr]) -> ast.Call:
    """``node`` with each read of a name in ``values`` replaced by its expression; the
    nodes on the way are shallow copies, everything else is shared (so every other name
    still resolves where it is written)."""

    def walk(nd: ast.AST) -> ast.AST:
        if isinstance(nd, ast.Name) and isinstance(nd.ctx, ast.Load) and nd.id in values:
            return values[nd.id]
        if isinstance(nd, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return nd  # a nested scope may rebind the name; left as written
        changed: dict[str, Any] = {}
        for field, value in ast.iter_fields(nd):
            if isinstance(value, ast.AST):
                new = walk(value)
                if new is not value:
                    changed[field] = new
            elif isinstance(value, list):
                items = [walk(v) if isinstance(v, ast.AST) else v for v in value]
                if any(a is not b for a, b in zip(items, value, strict=True)):
                    changed[field] = items
        if not changed:
            return nd
        out = copy.copy(nd)
        for field, value in changed.items():
            setattr(out, field, value)
        return out

    result = walk(node)
    assert isinstance(result, ast.Call)
    return result
