"""Bounded YAML loading: hostile documents become one clear error, not a hang or a
traceback.

PyYAML's safe loader has three ways to be turned against its caller, each closed here:

- **Aliases**: ``&a`` / ``*a`` share one node, and a 1 KB "billion laughs" document
  expands to 10^9 nodes for whoever walks it (a depth check, a JSON dump, a parser): the
  nodes that aliases stand for are counted as the document is composed, and a document
  whose aliases stand for more than ``MAX_ALIAS_NODES`` nodes, or an alias inside the
  node it names, is refused.
- **Numbers**: an integer of thousands of digits costs quadratic time to convert and,
  past 4,300 digits, raises a ValueError whose text is a paragraph; ``0x_`` raises one
  too. A number longer than ``MAX_NUMBER_CHARS`` characters is refused, and a malformed
  one is an error with its line.
- **Nesting**: the composer recurses once per level; deeper than ``MAX_DEPTH`` is refused
  before Python's own recursion limit is reached.

Timestamps are kept as the text they were written as, the way Kubernetes reads YAML
(sigs.k8s.io/yaml leaves them strings, and the API server parses them as RFC 3339), so
``2023-01-01 10:00`` is refused where a time is read instead of being taken for a local
time — and ``0001-01-01`` or ``2023-02-30`` never reach ``datetime``.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import Node, ScalarNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from volsched.cache.json_limits import MAX_DEPTH, MAX_NUMBER_CHARS, JsonLimitError, check_depth

_CParser: Any
try:
    import yaml._yaml as _libyaml

    _CParser = _libyaml.CParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _CParser = None

# The nodes all aliases of one document may stand for together. Kubernetes manifests and
# config files rarely use aliases at all; a few shared blocks stay far below this.
MAX_ALIAS_NODES = 10_000


class YamlLimitError(ValueError):
    """The text is not YAML volsched reads; the message is one line (no file name)."""


class _Beyond(ComposerError):
    """A bound of this module, not a syntax error."""


class _BoundedComposer(Composer):
    """PyYAML's composer, counting depth and what aliases stand for."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._composed = 0  # nodes composed from the text itself
        self._expanded = 0  # nodes aliases stand for
        # For each anchored node once it is complete: the nodes it stands for.
        self._anchored_size: dict[int, int] = {}

    def compose_document(self) -> Any:
        self._expanded = 0
        self._anchored_size.clear()
        return super().compose_document()

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(AliasEvent):  # type: ignore[attr-defined]
            event = self.peek_event()  # type: ignore[attr-defined]
            target = self.anchors.get(event.anchor)
            if target is not None:
                size = self._anchored_size.get(id(target))
                if size is None:
                    raise _Beyond(
                        None,
                        None,
                        f"the alias *{event.anchor} is inside the node it names",
                        event.start_mark,
                    )
                self._expanded += size
                if self._expanded > MAX_ALIAS_NODES:
                    raise _Beyond(
                        None,
                        None,
                        f"aliases expand to more than {MAX_ALIAS_NODES} nodes",
                        event.start_mark,
                    )
            return _composed(super().compose_node(parent, index))
        event = self.peek_event()  # type: ignore[attr-defined]
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Beyond(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        start = self._composed + self._expanded
        self._composed += 1
        node = _composed(super().compose_node(parent, index))
        self._depth -= 1
        if event.anchor is not None:
            self._anchored_size[id(node)] = self._composed + self._expanded - start
        return node


class _BoundedConstructor(SafeConstructor):
    """The safe constructor, with numbers bounded and times kept as text."""

    def construct_yaml_int(self, node: ScalarNode) -> int:
        _check_length(node)
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            raise ConstructorError(
                None, None, f"{_shown(node.value)} is not a number", node.start_mark
            ) from None

    def construct_yaml_float(self, node: ScalarNode) -> float:
        _check_length(node)
        try:
            return super().construct_yaml_float(node)
        except ValueError:
            raise ConstructorError(
                None, None, f"{_shown(node.value)} is not a number", node.start_mark
            ) from None

    def construct_yaml_timestamp(self, node: ScalarNode) -> str:  # type: ignore[override]
        return str(self.construct_scalar(node))


for _tag, _construct in (
    ("int", _BoundedConstructor.construct_yaml_int),
    ("float", _BoundedConstructor.construct_yaml_float),
    ("timestamp", _BoundedConstructor.construct_yaml_timestamp),
):
    _BoundedConstructor.add_constructor(  # type: ignore[type-var]
        f"tag:yaml.org,2002:{_tag}", _construct
    )

if _CParser is not None:

    class _BoundedLoader(
        _BoundedComposer,
        _BoundedConstructor,
        Resolver,
        _CParser,  # type: ignore[misc]
    ):
        """libyaml scans and parses (a tenth of the time); Python composes, bounded."""

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            _BoundedComposer.__init__(self)
            _BoundedConstructor.__init__(self)
            Resolver.__init__(self)

else:  # pragma: no cover - PyYAML built without libyaml

    class _BoundedLoader(  # type: ignore[no-redef]
        Reader, Scanner, Parser, _BoundedComposer, _BoundedConstructor, Resolver
    ):
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            _BoundedComposer.__init__(self)
            _BoundedConstructor.__init__(self)
            Resolver.__init__(self)


def _composed(node: Node | None) -> Node:
    assert node is not None  # compose_node is called only where an event is waiting
    return node


def _check_length(node: ScalarNode) -> None:
    if len(node.value) > MAX_NUMBER_CHARS:
        raise _Beyond(
            None, None, f"a number longer than {MAX_NUMBER_CHARS} characters", node.start_mark
        )


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")


def describe(error: yaml.YAMLError, what: str = "YAML") -> str:
    """One line for a PyYAML error: what, and where."""
    mark = getattr(error, "problem_mark", None)
    where = f"at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    if "nesting depth" in problem:  # libyaml's own limit, deeper than ours
        problem = f"nested deeper than {MAX_DEPTH} levels"
    if isinstance(error, _Beyond) or "nesting depth" in str(getattr(error, "problem", "")):
        return f"{problem} ({where})" if where else problem
    return f"not valid {what} {where}: {problem}" if where else f"not valid {what}: {problem}"


def load_all(text: str, what: str = "YAML") -> list[Any]:
    """Every document of ``text`` (``None`` for an empty one), within the bounds above.

    Raises ``YamlLimitError`` with one line saying where and what is wrong.
    """
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(text)  # reads the text: unprintable characters fail here
        documents: list[Any] = []
        while loader.check_data():  # type: ignore[no-untyped-call]
            documents.append(loader.get_data())
        for index, document in enumerate(documents):
            # Aliases can still stack shallow nodes deep; bounded in size, cheap to walk.
            check_depth(document, f"document {index + 1}")
        return documents
    except yaml.YAMLError as error:
        raise YamlLimitError(describe(error, what)) from None
    except JsonLimitError as error:
        raise YamlLimitError(str(error)) from None
    except RecursionError:
        raise YamlLimitError(f"nested deeper than {MAX_DEPTH} levels") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_one(text: str) -> Any:
    """The single document of ``text`` (``None`` when empty); more than one is refused."""
    documents = load_all(text)
    if len(documents) > 1:
        raise YamlLimitError(f"holds {len(documents)} YAML documents; expected one")
    return documents[0] if documents else None
