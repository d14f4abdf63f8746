"""A page's elements as a test reads them: each tag with its attributes and its text."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[Element] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str
             ) -> list[Element]:
        """The elements under this one (itself excluded) with that tag, class, attributes
        (``id_`` stands for ``id``)."""
        wanted = {key.rstrip("_"): value for key, value in attrs.items()}
        found = []
        for child in self.children:
            if ((tag is None or child.tag == tag) and (cls is None or cls in child.classes)
                    and all(child.attrs.get(k) == v for k, v in wanted.items())):
                found.append(child)
            found.extend(child.find(tag, cls, **attrs))
        return found

    def one(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Element:
        found = self.find(tag, cls, **attrs)
        assert len(found) == 1, f"{len(found)} elements match {tag} {cls} {attrs}"
        return found[0]


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {})
        self.open = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.open[-1].children.append(element)
        if tag not in VOID:
            self.open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.open[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.open) - 1, 0, -1):
            if self.open[depth].tag == tag:
                del self.open[depth:]
                return

    def handle_data(self, data: str) -> None:
        for element in self.open:
            element.text += data


def page(text: str) -> Element:
    """The parsed page."""
    parser = _Parser()
    parser.feed(text)
    parser.close()
    return parser.root


def squashed(text: str) -> str:
    """Text with its runs of white space as one space, trimmed."""
    return " ".join(text.split())
