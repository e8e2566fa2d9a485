"""What every subcommand of the GPU driver shares: the paths, the build, packages from
`rowfuse compile`, the GPU machine's environment (libraries, CUPTI, the IREE wheel), and
running and recording steps.

Two folders, both git-ignored:
  build-gpu/       what travels to the GPU machine (carried as one path): bin/, lib/,
                   pkgs/NAME/ (slim packages: plan.json, weights.bin, librowfuse_pkg.so),
                   one folder per subcommand that needs more, whl/ (the IREE runtime
                   wheel), REVISION, and SUB.json, the manifest of each prepared subcommand
  build-gpu-work/  stays here: the CMake build, compile folders, logs, the package cache
"""

from __future__ import annotations

import concurrent.futures as cf
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CARRY = ROOT / "build-gpu"
WORK = ROOT / "build-gpu-work"
BIN = CARRY / "bin"
LIB = CARRY / "lib"
PKGS = CARRY / "pkgs"
CACHE = WORK / "pkgs"
# the package's files the runtime reads (the compile folder holds more: the generator's
# sources, PTX, cubins, logs)
PKG_FILES = ("plan.json", "weights.bin", "librowfuse_pkg.so")
# libraries the CLI and librowfuse.so link that the GPU machine's image lacks
EXTRA_LIBS = ("cjson", "protobuf-c", "libzip", "libbz2", "libgomp")
CARRY_LIMIT_MIB = 56  # of the 64 MiB a call takes, the working tree needs the rest
PACK = CARRY / "carry.tar.xz"  # everything but the manifests and wheels, xz-compressed


def say(msg: str) -> None:
    print(msg, flush=True)


class Failed(Exception):
    """A step of `prepare` that cannot go on."""


# ---- running commands ----


def sh(cmd, log=None, timeout=None, env=None, cwd=ROOT, text_input=None):
    """Runs cmd (a list) in its own process group; stdout and stderr to `log` (a path) or
    captured. Returns (exit status, output text or '', seconds, timed out). A command that
    outlives `timeout` seconds is killed with its whole group (compute-sanitizer's target
    too). A program that cannot be started is exit status 127 with the reason as output."""
    t0 = time.monotonic()
    f = open(log, "w") if log else None
    try:
        p = subprocess.Popen(
            [str(c) for c in cmd],
            stdout=f or subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if text_input is not None else subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            text=True,
            start_new_session=True,
        )
    except OSError as e:
        if f:
            f.write(f"cannot start {cmd[0]}: {e}\n")
            f.close()
        return 127, f"cannot start {cmd[0]}: {e}", time.monotonic() - t0, False
    timed_out = False
    try:
        out, _ = p.communicate(input=text_input, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = p.communicate()
    if f:
        f.close()
        if timed_out:
            with open(log, "a") as g:
                g.write(f"\n[killed after {timeout} s]\n")
    return p.returncode, out or "", time.monotonic() - t0, timed_out


def pool_map(fn, items, workers):
    """fn over items on `workers` threads (each usually waiting on a subprocess), results
    in the items' order."""
    with cf.ThreadPoolExecutor(max_workers=max(1, workers)) as ex:
        return list(ex.map(fn, items))


def read_text(path) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_json(path, doc) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, default=str)


# ---- here: the build and the packages ----


def revision() -> str:
    rc, out, _, _ = sh(["git", "rev-parse", "--short=12", "HEAD"])
    if rc != 0:
        return "unknown"
    rev = out.strip()
    rc, _, _, _ = sh(["git", "diff", "--quiet", "HEAD"])
    return rev + ("-dirty" if rc != 0 else "")


def source_stamp() -> str:
    """A hash of every source a package depends on: the planner, the chain matcher and
    loader, the package writer, the compile command, the public headers and the kernel
    generator, each under its path from the repository root (so any checkout of the same
    sources has the same stamp). A cached package made from other sources is rebuilt, and
    `run` refuses a manifest whose stamp is not this tree's."""
    pats = [
        "src/compile/*.[ch]",
        "src/chain/*.[ch]",
        "src/plan/*.[ch]",
        "src/pkg/*.[ch]",
        "src/cli/cmd_compile.c",
        "include/rowfuse/*.h",
        "python/rowfuse/kernels/*.py",
        "kernels/*.py",
    ]
    h = hashlib.sha1()
    for p in pats:
        for f in sorted(glob.glob(str(ROOT / p))):
            h.update(str(Path(f).relative_to(ROOT)).encode())
            h.update(Path(f).read_bytes())
    return h.hexdigest()[:12]


def build(jobs: int) -> None:
    """The CLI, both shared libraries and the runtime's unit test (CMake, Release, sm_90),
    copied with the libraries the GPU machine lacks into build-gpu/bin and build-gpu/lib."""
    b = WORK / "cmake"
    WORK.mkdir(parents=True, exist_ok=True)
    say(f"== build (cmake, {b.relative_to(ROOT)})")
    steps = [
        [
            "cmake",
            "-S",
            ROOT,
            "-B",
            b,
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCMAKE_CUDA_ARCHITECTURES=90",
            "-DRF_WERROR=OFF",
        ],
        [
            "cmake",
            "--build",
            b,
            "-j",
            str(jobs),
            "--target",
            "rowfuse",
            "rowfuse_shared",
            "rowfuse_runtime_shared",
            "test_runtime_nogpu",
            "rf_test_fake_pkg",
        ],
    ]
    for i, cmd in enumerate(steps):
        log = WORK / f"build-{i}.log"
        rc, _, secs, _ = sh(cmd, log=log)
        if rc != 0:
            say(read_text(log)[-3000:])
            raise Failed(f"build step failed: {' '.join(map(str, cmd))} (log {log})")
    BIN.mkdir(parents=True, exist_ok=True)
    LIB.mkdir(parents=True, exist_ok=True)
    wanted = {
        "rowfuse": BIN,
        "test_runtime_nogpu": BIN,
        "librf_test_fake_pkg.so": BIN,
        "librowfuse.so": LIB,
        "librowfuse_runtime.so": LIB,
    }
    found = {}
    for name, dest in wanted.items():
        hits = sorted(b.glob(name)) + sorted(b.glob(f"**/{name}"))
        if not hits:
            raise Failed(f"the build made no {name}")
        shutil.copy2(hits[0].resolve(), dest / name)
        found[name] = dest / name
    rc, out, _, _ = sh(
        ["ldd", found["rowfuse"], found["librowfuse.so"], found["librowfuse_runtime.so"]]
    )
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
            if any(k in parts[2] for k in EXTRA_LIBS):
                shutil.copy2(os.path.realpath(parts[2]), LIB / os.path.basename(parts[2]))
    say(f"  {', '.join(sorted(os.listdir(BIN)))}; lib: {', '.join(sorted(os.listdir(LIB)))}")


def compile_env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), e.get("PYTHONPATH", "")])
    return e


def compile_one(name: str, args: list, stamp: str, weights: bool = True) -> dict:
    """`rowfuse compile ARGS -o DIR` into the cache (build-gpu-work/pkgs/KEY, KEY a hash of
    the arguments and the sources), unless it is there already. Returns {name, args,
    status: ok | unsupported | FAILED, detail, seconds, cache: KEY}; 'unsupported' is the
    compiler saying that no schedule fits the shape (with its message)."""
    key = hashlib.sha1(json.dumps([stamp, [str(a) for a in args]]).encode()).hexdigest()[:16]
    cache = CACHE / key
    rec = {
        "name": name,
        "args": [str(a) for a in args],
        "status": "ok",
        "detail": "",
        "seconds": 0.0,
        "cache": key,
    }
    if (cache / "plan.json").is_file():
        rec["detail"] = "up to date"
        return rec
    # compiled into KEY.part and renamed when whole: a compile killed half way (the
    # package's plan.json written, its kernels or weights not) never looks up to date
    part = CACHE / f"{key}.part"
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(part, ignore_errors=True)
    cache.parent.mkdir(parents=True, exist_ok=True)
    log = CACHE / f"{key}.log"
    rc, _, secs, _ = sh([BIN / "rowfuse", "compile", *args, "-o", part], log=log, env=compile_env())
    rec["seconds"] = round(secs, 1)
    text = read_text(log).strip().splitlines()
    if rc != 0 or not (part / "plan.json").is_file():
        last = text[-1] if text else f"exit {rc}"
        rec["status"] = "unsupported" if "unsupported" in last.lower() else "FAILED"
        rec["detail"] = last[:300]
        shutil.rmtree(part, ignore_errors=True)
        return rec
    part.rename(cache)
    rec["detail"] = (text[1].strip() if len(text) > 1 else "")[:120]
    return rec


def cache_for(stamp: str) -> None:
    """The package cache holds the packages of one stamp: another stamp's are dropped
    (each package keeps its weights, so a few prepares from other sources would fill the
    disk). Called once by `prepare`, before any compile."""
    mark = CACHE / "STAMP"
    if read_text(mark).strip() != stamp:
        shutil.rmtree(CACHE, ignore_errors=True)
        CACHE.mkdir(parents=True)
        mark.write_text(stamp + "\n")


def compile_many(specs, jobs: int, stamp: str) -> dict:
    """specs: [(name, args)] or [(name, args, weights)]; compiled `jobs` at a time into
    the cache (cache_for), each copied (slim) to build-gpu/pkgs/NAME (without weights.bin
    where the spec says so). Returns {name: record}."""

    def one(spec):
        name, args = spec[0], spec[1]
        weights = spec[2] if len(spec) > 2 else True
        rec = compile_one(name, args, stamp)
        if rec["status"] == "ok":
            dest = PKGS / name
            dest.mkdir(parents=True, exist_ok=True)
            for f in PKG_FILES:
                if f != "weights.bin" or weights:
                    shutil.copy2(CACHE / rec["cache"] / f, dest / f)
        took = f"{rec['seconds']:.0f} s" if rec["seconds"] else "cached"
        say(f"  {name}: {rec['status']} ({took}) {rec['detail'][:100]}")
        return rec

    seen, unique = set(), []
    for s in specs:
        if s[0] not in seen:
            seen.add(s[0])
            unique.append(s)
    return {r["name"]: r for r in pool_map(one, unique, jobs)}


def fetch_iree_wheel() -> str:
    """The iree-base-runtime wheel of the version installed here, for the GPU machine's
    Python 3.12, in build-gpu/whl (the GPU machine has no package index)."""
    from importlib.metadata import version

    v = version("iree-base-runtime")
    dest = CARRY / "whl"
    dest.mkdir(parents=True, exist_ok=True)
    have = sorted(dest.glob(f"iree_base_runtime-{v}-cp312-*.whl"))
    if have:
        return have[0].name
    cached = sorted((WORK / "whl").glob(f"iree_base_runtime-{v}-cp312-*.whl"))
    if not cached:
        plats = [
            "manylinux_2_28_x86_64",
            "manylinux_2_27_x86_64",
            "manylinux_2_17_x86_64",
            "manylinux2014_x86_64",
        ]
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--implementation",
            "cp",
            "-d",
            WORK / "whl",
            f"iree-base-runtime=={v}",
        ]
        for p in plats:
            cmd[-1:-1] = ["--platform", p]
        rc, out, _, _ = sh(cmd)
        cached = sorted((WORK / "whl").glob(f"iree_base_runtime-{v}-cp312-*.whl"))
        if rc != 0 or not cached:
            raise Failed(
                f"pip download iree-base-runtime=={v} for Python 3.12 failed: {out[-500:]}"
            )
    shutil.copy2(cached[0], dest / cached[0].name)
    return cached[0].name


def pack() -> None:
    """build-gpu/ into build-gpu/carry.tar.xz (packages compress about 5x), leaving the
    manifests, REVISION and whl/ beside it; `Run` unpacks it there."""
    import tarfile

    keep = {PACK.name, "whl", "REVISION"}
    items = [p for p in sorted(CARRY.iterdir()) if p.name not in keep and p.suffix != ".json"]
    tmp = PACK.with_suffix(".tmp")
    with tarfile.open(tmp, "w:xz", preset=6) as tar:
        for p in items:
            tar.add(p, arcname=p.name)
    tmp.rename(PACK)
    for p in items:
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def unpack() -> str:
    """Unpacks build-gpu/carry.tar.xz in place (once); returns why not, or ''."""
    import tarfile

    mark = CARRY / ".unpacked"
    if mark.exists():
        return ""
    if not PACK.is_file():
        return f"no build-gpu/{PACK.name}: run `tests/gpu/gpu prepare SUB...` here, carry build-gpu"
    with tarfile.open(PACK, "r:xz") as tar:
        tar.extractall(CARRY, filter="tar")
    mark.write_text("")
    return ""


def carried_mib() -> float:
    total = 0
    for dirpath, _, files in os.walk(CARRY):
        for f in files:
            total += os.path.getsize(os.path.join(dirpath, f))
    return total / 2**20


# ---- there: the GPU machine's environment ----


def _pip_nvidia_dirs() -> list[str]:
    try:
        import nvidia  # noqa: F401  (the CUDA wheels PyTorch brings)
    except ImportError:
        return []
    out = []
    for p in getattr(sys.modules["nvidia"], "__path__", []):
        for d in ("cu13/lib", "cublas/lib", "cuda_cupti/lib", "cuda_runtime/lib"):
            if os.path.isdir(os.path.join(p, d)):
                out.append(os.path.join(p, d))
    return out


def find_tool(name: str) -> str | None:
    for d in ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute"):
        hits = sorted(glob.glob(f"{d}/{name}")) + sorted(glob.glob(f"{d}/*/{name}"))
        if hits:
            return hits[-1]
    return shutil.which(name)


def gpu_env() -> dict:
    """The environment every step on the GPU machine runs in: the carried libraries first,
    then the CUDA toolkit's and PyTorch's CUDA wheels (cuBLASLt, CUPTI), the rowfuse
    libraries for Python (ROWFUSE_LIB, ROWFUSE_RUNTIME_LIB), CUPTI for the spans, the
    revision the carry was made from, and python/ + examples/ on PYTHONPATH."""
    e = dict(os.environ)
    libs = [str(LIB), "/usr/local/cuda/lib64", *_pip_nvidia_dirs()]
    e["LD_LIBRARY_PATH"] = os.pathsep.join(libs + [e.get("LD_LIBRARY_PATH", "")]).rstrip(":")
    cupti = []
    for d in ["/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64", *libs[2:]]:
        cupti += sorted(glob.glob(f"{d}/libcupti.so*"))
    e["ROWFUSE_CUPTI_LIB"] = cupti[0] if cupti else ""
    e["ROWFUSE_LIB"] = str(LIB / "librowfuse.so")
    e["ROWFUSE_RUNTIME_LIB"] = str(LIB / "librowfuse_runtime.so")
    e["ROWFUSE_GIT_REV"] = (
        e.get("ROWFUSE_GIT_REV") or read_text(CARRY / "REVISION").strip() or "unknown"
    )
    e["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python"), str(ROOT / "examples"), e.get("PYTHONPATH", "")]
    ).rstrip(":")
    e["PYTHONUNBUFFERED"] = "1"
    return e


def iree_site(env: dict, work: Path) -> str | None:
    """Unpacks the carried IREE runtime wheel into work/site and puts it on env's
    PYTHONPATH (once per run); returns why not, or None."""
    site = work / "site"
    if site.is_dir():
        return None
    whl = sorted((CARRY / "whl").glob("iree_base_runtime-*cp312*.whl"))
    if not whl:
        return "no iree_base_runtime wheel in build-gpu/whl (prepare lab or mlir)"
    import zipfile

    site.mkdir(parents=True)
    with zipfile.ZipFile(whl[0]) as z:
        z.extractall(site)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(site)])
    return None


class Run:
    """The GPU half of one driver call: raw results under `work`, a step list, and per
    subcommand a summary that rowfuse.bench.summarize prints."""

    def __init__(self, out: Path):
        self.out = out
        self.work = Path(tempfile.mkdtemp(prefix="rowfuse-gpu-"))
        self.env = gpu_env()
        self.steps: list[dict] = []
        self.subs: dict[str, dict] = {}
        self.primary: list[Path] = []  # files worth their own place under $OUT
        self.cores = os.cpu_count() or 1
        self.unpacked = unpack()  # '' when build-gpu's packages are in place

    def step(self, sub, name, ok, seconds, detail="") -> bool:
        status = "ok" if ok else "FAILED"
        self.steps.append(
            {
                "sub": sub,
                "step": name,
                "status": status,
                "seconds": round(seconds, 1),
                "detail": detail,
            }
        )
        say(f"  [{sub}] {name}: {status} ({seconds:.0f} s){' ' + detail[:140] if detail else ''}")
        return ok

    def manifest(self, sub):
        """The manifest `prepare` wrote for sub, or None (a FAILED step: not prepared)."""
        m = read_json(CARRY / f"{sub}.json")
        if m is not None and self.unpacked:
            self.step(sub, "unpack build-gpu", False, 0, self.unpacked)
            return None
        if m is None:
            self.step(
                sub,
                "prepared",
                False,
                0,
                f"no build-gpu/{sub}.json: run `tests/gpu/gpu prepare {sub}` here, carry build-gpu",
            )
        elif m.get("stamp") != source_stamp():
            # packages built from other kernel or planner sources than this tree's: their
            # figures would be credited to code they were not built from
            self.step(
                sub,
                "prepared from this tree's package sources",
                False,
                0,
                f"build-gpu/{sub}.json has package sources {m.get('stamp')}, this tree "
                f"{source_stamp()}: run `tests/gpu/gpu prepare` again",
            )
            return None
        return m

    def rowfuse(self):
        return str(BIN / "rowfuse")

    def cmd(self, sub, name, cmd, log, timeout, env=None, cwd=ROOT):
        """Runs one command as one step (ok: exit 0 within `timeout` seconds); its log under
        work/SUB/. Returns (ok, exit status, log text)."""
        d = self.work / sub
        d.mkdir(parents=True, exist_ok=True)
        rc, _, secs, timed_out = sh(cmd, log=d / log, timeout=timeout, env=env or self.env, cwd=cwd)
        text = read_text(d / log)
        last = [ln for ln in text.strip().splitlines() if ln.strip()][-1:] or [""]
        why = f"timed out after {timeout} s" if timed_out else f"exit {rc}"
        ok = rc == 0 and not timed_out
        self.step(sub, name, ok, secs, "" if ok else f"{why}: {last[0][:160]}")
        return ok, rc, text
