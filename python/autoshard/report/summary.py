"""Reads the structure of an autoshard HTML report back (for the tests)."""

from html.parser import HTMLParser
from typing import Dict, List


class _Summary(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: List[str] = []
        self.figures: List[Dict] = []
        self.mesh_ranks = 0
        self.body: Dict[str, str] = {}
        self._svg = None
        self._lane = None
        self._bar = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "body":
            self.body = {k: v for k, v in a.items() if v is not None}
        elif tag == "h2" and a.get("id"):
            self.sections.append(a["id"])
        elif tag == "svg" and ("timeline" in classes or "bars" in classes):
            self._svg = {"id": a.get("id", ""), "type": classes[0],
                         "kind": a.get("data-kind", ""), "lanes": [],
                         "bubbles": 0, "arrows": 0, "bars": []}
            self.figures.append(self._svg)
        elif self._svg is not None and tag == "g" and "lane" in classes:
            self._lane = {"units": 0, "kinds": {}}
            self._svg["lanes"].append(self._lane)
        elif self._svg is not None and tag == "g" and "bar" in classes:
            self._bar = []
            self._svg["bars"].append(self._bar)
        elif self._svg is not None and tag == "rect" and "unit" in classes:
            if self._lane is not None:
                self._lane["units"] += 1
                kind = classes[1] if len(classes) > 1 else "?"
                self._lane["kinds"][kind] = self._lane["kinds"].get(kind, 0) + 1
        elif self._svg is not None and tag == "rect" and "bubble" in classes:
            self._svg["bubbles"] += 1
        elif self._svg is not None and tag == "rect" and "seg" in classes:
            if self._bar is not None:
                self._bar.append(classes[1] if len(classes) > 1 else "?")
        elif self._svg is not None and tag == "line" and "p2p" in classes:
            self._svg["arrows"] += 1
        elif tag == "div" and "rank" in classes and "data-rank" in a:
            self.mesh_ranks += 1

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg = None
            self._lane = None
            self._bar = None
        elif tag == "g":
            self._lane = None
            self._bar = None


def mesh_ranks(html: str) -> int:
    """The number of ranks drawn in a report page's mesh (0 without one)."""
    p = _Summary()
    p.feed(html)
    p.close()
    return p.mesh_ranks


def summarize(html: str) -> List[str]:
    """One line per fact of the page: ``sections a b c``, ``mesh N ranks``,
    ``body data-...=V``, then per figure ``timeline ID kind=K lanes=N
    units=U bubbles=B arrows=A`` followed by ``  lane i: U units (F=..)`` or
    ``bars ID kind=K bars=N`` followed by ``  bar i: seg seg ...``.
    Raises ValueError when the page has no report sections."""
    p = _Summary()
    p.feed(html)
    p.close()
    if not p.sections:
        raise ValueError("not an autoshard report page (no report sections: "
                         "dist-explain or dist-auto-plan format=html writes them)")
    out = ["sections " + " ".join(p.sections), f"mesh {p.mesh_ranks} ranks"]
    for k, v in sorted(p.body.items()):
        if k.startswith("data-"):
            out.append(f"body {k}={v}")
    for f in p.figures:
        if f["type"] == "timeline":
            units = sum(l["units"] for l in f["lanes"])
            out.append(f"timeline {f['id']} kind={f['kind']} lanes={len(f['lanes'])} "
                       f"units={units} bubbles={f['bubbles']} arrows={f['arrows']}")
            for i, lane in enumerate(f["lanes"]):
                kinds = " ".join(f"{k}={n}" for k, n in sorted(lane["kinds"].items()))
                out.append(f"  lane {i}: {lane['units']} units ({kinds})")
        else:
            out.append(f"bars {f['id']} kind={f['kind']} bars={len(f['bars'])}")
            for i, bar in enumerate(f["bars"]):
                out.append(f"  bar {i}: " + " ".join(bar))
    return out
