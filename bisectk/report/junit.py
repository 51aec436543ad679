"""JUnit XML for CI: one test suite per command, one test case per step.

Abstractions
------------
Case        -- a named step with a status (passed, failed, skipped/error), a one-line message and
               details (the report text) and a duration.
write_junit -- renders cases with xml.etree (markup escaped by the library, characters XML cannot
               hold by report/safe.xml_text) so any CI that reads JUnit shows the triage result
               next to its own tests.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from bisectk.report.safe import xml_text


@dataclass
class Case:
    name: str
    status: str            # "passed" | "failed" | "error" | "skipped"
    message: str = ""
    details: str = ""
    time_s: float = 0.0
    classname: str = "bisectk"


def to_xml(suite: str, cases: list[Case]) -> str:
    """The XML document; every text from a case goes through xml_text first (a commit subject may
    hold control characters, which ElementTree would write as they are: malformed XML)."""
    root = ET.Element("testsuites")
    node = ET.SubElement(root, "testsuite", name=xml_text(suite), tests=str(len(cases)),
                         failures=str(sum(c.status == "failed" for c in cases)),
                         errors=str(sum(c.status == "error" for c in cases)),
                         skipped=str(sum(c.status == "skipped" for c in cases)),
                         time=f"{sum(c.time_s for c in cases):.3f}")
    for c in cases:
        tc = ET.SubElement(node, "testcase", classname=xml_text(c.classname), name=xml_text(c.name),
                           time=f"{c.time_s:.3f}")
        if c.status in ("failed", "error", "skipped"):
            tag = {"failed": "failure", "error": "error", "skipped": "skipped"}[c.status]
            el = ET.SubElement(tc, tag, message=xml_text(c.message))
            el.text = xml_text(c.details)
        elif c.details:
            ET.SubElement(tc, "system-out").text = xml_text(c.details)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: str | Path, suite: str, cases: list[Case]) -> None:
    Path(path).write_text(to_xml(suite, cases), encoding="utf-8")
