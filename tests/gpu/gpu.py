"""The GPU driver: `tests/gpu/gpu prepare SUB...` here (no GPU: builds the binaries and every
package the subcommands need, each from `rowfuse compile`, into build-gpu/), then
`tests/gpu/gpu run SUB...` on the GPU machine (carry build-gpu): runs them, writes JSON under
$OUT (default out/gpu), prints a short table last, and exits 1 when any step FAILED.

Subcommands (tests/gpu/README.md): check, bench, gates, regret, lab, mlir, eval, profile,
chains, decode.
`run` takes any subset of what `prepare` made; a subcommand that was not prepared is a
FAILED step. Environment: JOBS (parallel compiles here, default 2); each subcommand's own
variables are in its module's docstring (tests/gpu/gpudrv/).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tarfile
import time
import traceback
from pathlib import Path

from gpudrv import (
    bench,
    chains,
    check,
    common,
    decode,
    evaluation,
    gates,
    lab,
    mlir,
    profile,
    regret,
)

SUBS = {
    "check": check,
    "bench": bench,
    "gates": gates,
    "regret": regret,
    "lab": lab,
    "mlir": mlir,
    "eval": evaluation,
    "profile": profile,
    "chains": chains,
    "decode": decode,
}
MAX_OUT_FILES = 8  # what comes back from the GPU machine's $OUT
LOG_CAP = 1 << 20  # bytes of one log kept in the archive (head and tail)


def prepare(subs: list[str]) -> int:
    jobs = int(os.environ.get("JOBS", "2"))
    t0 = time.monotonic()
    shutil.rmtree(common.CARRY, ignore_errors=True)  # the carry holds what this call makes
    try:
        common.build(jobs)
        rev = common.revision()
        (common.CARRY / "REVISION").write_text(rev + "\n")
        stamp = common.source_stamp()
        common.cache_for(stamp)
        common.say(f"== revision {rev}, package sources {stamp}")
        for s in subs:
            manifest = SUBS[s].prepare(jobs, stamp)
            common.write_json(common.CARRY / f"{s}.json", dict(manifest, revision=rev, stamp=stamp))
        common.pack()
    except common.Failed as e:
        common.say(f"prepare FAILED: {e}")
        return 1
    size = common.carried_mib()
    common.say(f"== build-gpu: {size:.1f} MiB after {time.monotonic() - t0:.0f} s")
    if size > common.CARRY_LIMIT_MIB:
        common.say(
            f"prepare FAILED: build-gpu is over {common.CARRY_LIMIT_MIB} MiB: "
            "prepare fewer subcommands at once"
        )
        return 1
    common.say(f"there (carry build-gpu): tests/gpu/gpu run {' '.join(subs)}")
    return 0


def _archive(work: Path, dest: Path) -> None:
    """Every log and JSON of the run in one archive (the IREE runtime unpacked for the run
    left out; a log over LOG_CAP keeps its head and tail)."""

    def add(tar, path: Path, arc: str):
        size = path.stat().st_size
        if size <= LOG_CAP:
            tar.add(path, arcname=arc)
            return
        with open(path, "rb") as f:
            head = f.read(LOG_CAP // 4)
            f.seek(size - 3 * LOG_CAP // 4)
            tail = f.read()
        data = head + f"\n[... {size - len(head) - len(tail)} bytes cut ...]\n".encode() + tail
        info = tarfile.TarInfo(arc)
        info.size = len(data)
        import io

        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(dest, "w:gz") as tar:
        for p in sorted(work.rglob("*")):
            rel = p.relative_to(work)
            if p.is_file() and rel.parts[0] != "site" and not p.name.endswith(".npy"):
                add(tar, p, str(rel))


def run(subs: list[str]) -> int:
    from rowfuse.bench import summarize

    out = Path(os.environ.get("OUT") or common.ROOT / "out" / "gpu")
    out.mkdir(parents=True, exist_ok=True)
    r = common.Run(out)
    rc, smi, _, _ = common.sh(
        [
            "nvidia-smi",
            "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm",
            "--format=csv,noheader",
        ]
    )
    device = (
        smi.strip().splitlines()[0] if rc == 0 and smi.strip() else f"no nvidia-smi (exit {rc})"
    )
    common.say(
        f"== {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {device}; revision "
        f"{r.env['ROWFUSE_GIT_REV']}; {r.cores} cores"
    )
    for s in subs:
        t0 = time.monotonic()
        common.say(f"== {s}")
        try:
            SUBS[s].run(r)
        except Exception:  # a broken subcommand is a FAILED step, never a silent stop
            r.step(
                s,
                "driver",
                False,
                time.monotonic() - t0,
                traceback.format_exc().strip().splitlines()[-1],
            )
            traceback.print_exc()
        common.say(f"== {s} done after {time.monotonic() - t0:.0f} s")
    summary = {
        "schema": "rowfuse-gpu-run/1",
        "revision": r.env["ROWFUSE_GIT_REV"],
        "device": device,
        "ran": subs,
        "steps": r.steps,
        "subs": r.subs,
    }
    common.write_json(r.work / "summary.json", summary)
    _archive(r.work, out / "gpu-logs.tgz")
    shutil.copy2(r.work / "summary.json", out / "summary.json")
    room = MAX_OUT_FILES - 2
    kept = [p for p in r.primary if p.is_file()]
    used = set()
    for p in kept[:room]:  # a name two subcommands share gets its folder's name in front
        name = p.name if p.name not in used else f"{p.parent.name}-{p.name}"
        used.add(name)
        shutil.copy2(p, out / name)
    if len(kept) > room:
        common.say(f"(in gpu-logs.tgz only: {', '.join(p.name for p in kept[room:])})")
    common.say(f"== results in {out}: summary.json, gpu-logs.tgz and {min(len(kept), room)} more")
    return summarize.print_summary(summary)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="tests/gpu/gpu", description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=["prepare", "run", "list"])
    p.add_argument("subs", nargs="*", metavar="SUB", help=", ".join(SUBS))
    a = p.parse_args(argv)
    if a.action == "list":
        for name, mod in SUBS.items():
            first = " ".join(mod.__doc__.split()).split(". ")[0]
            print(f"{name:<8} {first[len(name) + 2 :]}")
        return 0
    unknown = [s for s in a.subs if s not in SUBS]
    if unknown or not a.subs:
        p.error(
            f"name subcommands from: {', '.join(SUBS)}"
            + (f" (not {', '.join(unknown)})" if unknown else "")
        )
    subs = list(dict.fromkeys(a.subs))
    return prepare(subs) if a.action == "prepare" else run(subs)


if __name__ == "__main__":
    sys.exit(main())
