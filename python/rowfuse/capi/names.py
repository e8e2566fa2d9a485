"""The names rowfuse's C side defines once (include/rowfuse/plan.h), read from the header
(the copy installed with the package: rowfuse.capi.locate).

    from rowfuse.capi.names import SCHEDULES, KERNEL_MODES

SCHEDULES and KERNEL_MODES are tuples of names in the header's order, parsed from its
RF_SCHEDULE_LIST and RF_KERNEL_MODE_LIST X-macro lists, so Python never keeps a second,
hand-copied list. PLAN_VERSION is RF_PLAN_VERSION.
"""

from __future__ import annotations

import re

from rowfuse.capi import locate

HEADER = locate.c_file("include", "rowfuse", "plan.h")


def _x_list(text: str, macro: str) -> tuple[str, ...]:
    m = re.search(r"#define " + macro + r"\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    if not m:
        raise RuntimeError(f"{HEADER}: no {macro} list")
    names = tuple(re.findall(r'X\(\s*\w+\s*,\s*"([^"]+)"', m.group(1)))
    if not names:
        raise RuntimeError(f"{HEADER}: {macro} lists no names")
    return names


def _read() -> tuple[tuple[str, ...], tuple[str, ...], int]:
    with open(HEADER) as f:
        text = f.read()
    version = re.search(r"#define RF_PLAN_VERSION (\d+)", text)
    if not version:
        raise RuntimeError(f"{HEADER}: no RF_PLAN_VERSION")
    return (
        _x_list(text, "RF_SCHEDULE_LIST"),
        _x_list(text, "RF_KERNEL_MODE_LIST"),
        int(version.group(1)),
    )


SCHEDULES, KERNEL_MODES, PLAN_VERSION = _read()
VENDOR_SCHEDULE = SCHEDULES[-1]  # the list ends with the vendor baseline
PACKAGE_SCHEDULES = SCHEDULES[:-1]  # the ones a package's kernels run
