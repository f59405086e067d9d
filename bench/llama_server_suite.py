"""Run llama.cpp's own server test suite against ``loadout serve`` and ``llama-server``.

The suite is ``tools/server/tests/unit`` of the llama.cpp vendored in the llama-cpp-python
0.3.36 sdist the engine is built from. It runs unchanged; a pytest plugin
(``bench/llama_server_suite_plugin.py``) replaces only its server start (the binary) and
its model download (every server gets the demo model, SmolLM2-135M). ``llama-server`` is
built from the same sdist by ``bench/llama_tools.py`` (cached outside the repository, in
``LOADOUT_BENCH_CACHE``, default ``~/.cache/loadout-llama-server``); the suite's Python
packages go to a virtual environment there too. Nothing of llama.cpp is kept in the
repository.

    python bench/llama_server_suite.py                      # both servers, every file
    python bench/llama_server_suite.py --target loadout test_completion.py -k n_probs
    python bench/llama_server_suite.py --target loadout --reuse   # llama-server's last run

It prints, per file, the tests passed on each server and how many of those passing on
llama-server pass on Loadout, then every test that passes on llama-server only, with the
first line of its failure on Loadout. Results are kept as JSON in the cache folder
(``suite-<target>.json``, merged test by test over runs) and pytest's report of the last
run beside it (``suite-<target>-<pid>.log``); ``--reuse`` compares with the kept run of the
other server.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import venv
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE_PACKAGES = ("pytest~=8.3.3", "pytest-timeout", "filelock", "numpy", "openai~=2.14",
                  "prometheus-client", "requests", "wget", "aiohttp", "jsonschema")
TARGETS = ("llama-server", "loadout")


def cache_dir() -> Path:
    env = os.environ.get("LOADOUT_BENCH_CACHE")
    path = Path(env).expanduser() if env else Path.home() / ".cache" / "loadout-llama-server"
    os.environ["LOADOUT_BENCH_CACHE"] = str(path)  # llama_tools builds there too
    return path


def suite_dir() -> Path:
    sys.path.insert(0, str(HERE))
    import llama_tools

    return llama_tools.llama_cpp_source() / "tools" / "server" / "tests"


def llama_server_binary() -> Path:
    sys.path.insert(0, str(HERE))
    import llama_tools

    return llama_tools.build(("llama-server",))["llama-server"]


def suite_python() -> Path:
    """A virtual environment with the suite's own requirements (made once)."""
    root = cache_dir() / "suite-venv"
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    marker = root / "installed.txt"
    if not marker.is_file() or marker.read_text() != "\n".join(SUITE_PACKAGES):
        venv.create(root, with_pip=True, clear=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *SUITE_PACKAGES],
                       check=True, stderr=subprocess.DEVNULL)
        marker.write_text("\n".join(SUITE_PACKAGES))
    return python


def loadout_launcher(folder: Path) -> Path:
    """A script that runs ``loadout serve`` with the arguments it is given."""
    script = folder / "loadout-serve"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -m loadout serve \"$@\"\n")
    script.chmod(0o755)
    return script


def demo_model() -> Path:
    sys.path.insert(0, str(HERE.parent))
    from engine.demo import demo_model_path

    return demo_model_path()


def run_suite(target: str, server: Path, tests: Path, files: list[str], keyword: str | None,
              timeout_s: int, work: Path) -> dict[str, dict[str, str]]:
    """Run the suite against ``server``; returns {file: {test: outcome or failure}}."""
    report = work / f"junit-{target}.xml"
    env = {**os.environ, "LOADOUT_SUITE_SERVER": str(server),
           "LOADOUT_SUITE_MODEL": str(demo_model()),
           "LOADOUT_SUITE_TESTS_DIR": str(tests),
           "LOADOUT_SUITE_START_TIMEOUT": "120",
           "PYTHONPATH": os.pathsep.join([str(HERE), str(tests)]),
           "LOADOUT_HOME": str(work / "home"), "HF_HUB_OFFLINE": "1",
           "PORT": str(random.randint(20000, 40000)), "LLAMA_CACHE": str(work / "cache")}
    env.pop("DEBUG", None)
    args = [str(suite_python()), "-m", "pytest", "-p", "llama_server_suite_plugin",
            "-p", "no:cacheprovider", f"--timeout={timeout_s}", f"--junitxml={report}",
            *(files or ["unit"])]
    if keyword:
        args += ["-k", keyword]
    # pytest's own report (one line per test with -v) goes to a log to follow the run
    with open(cache_dir() / f"suite-{target}-{os.getpid()}.log", "w", encoding="utf-8") as log:
        subprocess.run([*args, "-v", "-p", "no:warnings"], cwd=tests, env=env, stdout=log,
                       stderr=subprocess.STDOUT)
    return parse_junit(report)


def parse_junit(report: Path) -> dict[str, dict[str, str]]:
    results: dict[str, dict[str, str]] = {}
    if not report.is_file():
        return results
    for case in ET.parse(report).getroot().iter("testcase"):
        module = (case.get("classname") or "").split(".")[-1]
        name = case.get("name") or "?"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                message = (child.get("message") or child.text or "").strip()
                outcome = "failed: " + (message.splitlines() or [""])[0][:200]
            elif child.tag == "skipped":
                outcome = "skipped"
        results.setdefault(f"{module}.py", {})[name] = outcome
    return results


def _log_outcomes(log: Path, results: dict[str, dict[str, str]]) -> None:
    for line in log.read_text(errors="replace").splitlines():
        m = re.match(r"unit/(\S+?\.py)::(.+?) (PASSED|FAILED|ERROR|SKIPPED)", line)
        if m:
            outcome = m.group(3).lower()
            results.setdefault(m.group(1), {})[m.group(2)] = \
                "passed" if outcome == "passed" else outcome


def from_logs(target: str) -> dict[str, dict[str, str]]:
    """What pytest's reports of ``target`` (``suite-<target>*.log``) say, for runs cut
    short before their JUnit report was written: the reports older than the kept results,
    then the kept results (written as each run ended), then the reports newer than them."""
    results: dict[str, dict[str, str]] = {}
    kept = cache_dir() / f"suite-{target}.json"
    kept_at = kept.stat().st_mtime if kept.is_file() else 0.0
    logs = sorted(cache_dir().glob(f"suite-{target}*.log"), key=lambda f: f.stat().st_mtime)
    for log in (f for f in logs if f.stat().st_mtime <= kept_at):
        _log_outcomes(log, results)
    for module, tests in (json.loads(kept.read_text()) if kept.is_file() else {}).items():
        results.setdefault(module, {}).update(tests)
    for log in (f for f in logs if f.stat().st_mtime > kept_at):
        _log_outcomes(log, results)
    return results


def keep(target: str, results: dict[str, dict[str, str]]) -> None:
    """Merge a run's results into the kept ones of ``target`` (test by test), so runs of
    single files add up to the whole suite."""
    kept = cache_dir() / f"suite-{target}.json"
    old = json.loads(kept.read_text()) if kept.is_file() else {}
    for module, tests in results.items():
        old.setdefault(module, {}).update(tests)
    kept.write_text(json.dumps(old, indent=1, sort_keys=True))


def summary(runs: dict[str, dict[str, dict[str, str]]]) -> str:
    llama, ours = runs.get("llama-server", {}), runs.get("loadout", {})
    lines = [f"{'file':34} {'llama-server':>12} {'loadout':>8} {'both':>6}"]
    totals = [0, 0, 0]
    misses: list[str] = []
    for module in sorted(set(llama) | set(ours)):
        ref, got = llama.get(module, {}), ours.get(module, {})
        ref_pass = {t for t, o in ref.items() if o == "passed"}
        got_pass = {t for t, o in got.items() if o == "passed"}
        both = ref_pass & got_pass
        for test in sorted(ref_pass - got_pass):
            misses.append(f"  {module}::{test}: {got.get(test, 'not run')}")
        counts = [len(ref_pass), len(got_pass), len(both)]
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        lines.append(f"{module:34} {counts[0]:>12} {counts[1]:>8} {counts[2]:>6}")
    lines.append(f"{'total':34} {totals[0]:>12} {totals[1]:>8} {totals[2]:>6}")
    if llama and ours and totals[0]:
        lines.append(f"of the tests passing on llama-server, {totals[2]}/{totals[0]} "
                     f"({100 * totals[2] / totals[0]:.1f}%) pass on loadout")
    if misses:
        lines.append("passing on llama-server only:")
        lines += misses
    if not llama:
        lines.append("not passing on loadout:")
        lines += [f"  {m}::{t}: {o}" for m, ts in sorted(ours.items())
                  for t, o in sorted(ts.items()) if o != "passed"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="test files of unit/ (default: all)")
    parser.add_argument("--target", choices=(*TARGETS, "both"), default="both")
    parser.add_argument("-k", dest="keyword", default=None, help="pytest -k expression")
    parser.add_argument("--reuse", action="store_true",
                        help="compare with the kept results of the server not run")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per test")
    parser.add_argument("--logs", action="store_true",
                        help="run nothing: report what the kept pytest reports say")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    cache_dir()  # before llama_tools reads LOADOUT_BENCH_CACHE
    if args.logs:
        print(summary({t: from_logs(t) for t in TARGETS}))
        return 0
    tests = suite_dir()
    files = [f if f.startswith("unit/") else f"unit/{f}" for f in args.files]
    targets = TARGETS if args.target == "both" else (args.target,)
    runs: dict[str, dict[str, dict[str, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="llama-suite-") as tmp:
        work = Path(tmp)
        for target in targets:
            server = llama_server_binary() if target == "llama-server" \
                else loadout_launcher(work)
            runs[target] = run_suite(target, server, tests, files, args.keyword,
                                     args.timeout, work)
            keep(target, runs[target])
        shutil.rmtree(work / "cache", ignore_errors=True)
    if args.reuse:
        for target in TARGETS:
            kept = cache_dir() / f"suite-{target}.json"
            if target not in runs and kept.is_file():
                old = json.loads(kept.read_text())
                if files or args.keyword:  # only the tests of this partial run
                    ran = {(m, t) for r in runs.values() for m, ts in r.items() for t in ts}
                    old = {m: {t: o for t, o in ts.items() if (m, t) in ran}
                           for m, ts in old.items()}
                runs[target] = {m: ts for m, ts in old.items() if ts}
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    print(summary(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
