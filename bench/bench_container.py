"""Benchmark of the action's container: image size, build time, and container start to receipt vs the host CLI.

    python bench/bench_container.py [--repeat N] [--no-cold-build] [--only-prebuilt]

Uses the engine the container tests use (docker where a daemon answers, else podman on a debootstrap base; see
tests/support/container_engine.py). Measured in one run: the image's size and the bytes its layers add over the base; the
build time from a warm base without the layer cache (`--no-cache`: apt downloads and installs everything), and a
rebuild after a source change (the apt layer cached); then, on the demo repository's tampering pull request and its
honest one, the wall time from `run` to a written receipt, beside the same check by the CLI on the host. Wall times
are medians of N runs. Results go to stdout as Markdown and to bench/out/container.json.

Then what a release's prebuilt image saves: from an empty image store each time (a fresh runner), start to verdict
of the full action (check run, annotations, artifact) when the step must first build the Dockerfile (its base
pulled, apt run, no layer cache) against pulling the published image; both pull from a registry on 127.0.0.1
(Debian's `docker-registry`) that holds the base and the image. Podman only: a second store is one
CONTAINERS_STORAGE_CONF away, while a docker daemon has one store that must not be emptied.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.action_runner import (  # noqa: E402 - needs tests/ on the path
    TODAY,
    Runner,
    action_env,
    make_runner,
    run_container,
)
from support.container_engine import (  # noqa: E402
    IMAGE,
    LOCAL_BASE,
    Engine,
    build_image,
    ensure_base,
    find_engine,
    image_size,
)
from support.fake_github import FakeGitHub  # noqa: E402
from support.fake_results_service import FakeResultsService, runtime_token  # noqa: E402
from support.local_registry import empty_store, local_registry  # noqa: E402

OUT = ROOT / "bench" / "out"
SHARED = ROOT.parent / "shared"


def _timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _median(fn: Callable[[], None], repeat: int) -> float:
    return statistics.median(_timed(fn) for _ in range(repeat))


def _paired(host: Callable[[], None], container: Callable[[], None], repeat: int) -> dict[str, float]:
    """Host and container runs alternated, so both see the same machine load; overhead is the median pair gap."""
    pairs = [(_timed(host), _timed(container)) for _ in range(repeat)]
    return {
        "host_cli_s": statistics.median(h for h, _ in pairs),
        "container_s": statistics.median(c for _, c in pairs),
        "overhead_s": statistics.median(c - h for h, c in pairs),
    }


def _container_check(engine: Engine, runner: Runner, run: bool) -> Callable[[], None]:
    args = [
        "check",
        "--event",
        "/github/workflow/event.json",
        "--today",
        TODAY,
        "--receipt",
        "/github/home/receipt.json",
        "--format",
        "json",
        *([] if run else ["--no-run"]),
    ]

    def go() -> None:
        receipt = runner.file("home/receipt.json")
        receipt.unlink(missing_ok=True)
        proc = run_container(
            engine, IMAGE, runner, {"HOME": "/github/home", "GITHUB_WORKSPACE": "/github/workspace"}, *args
        )
        if not receipt.exists():
            raise SystemExit(f"no receipt from the container: {proc.stderr.decode(errors='replace')[-2000:]}")

    return go


def _host_check(runner: Runner, run: bool) -> Callable[[], None]:
    receipt = runner.root / "host-receipt.json"
    argv = [
        sys.executable,
        "-m",
        "evidence_gate",
        "check",
        "--repo",
        str(runner.workspace),
        "--event",
        str(runner.file("workflow/event.json")),
        "--today",
        TODAY,
        "--receipt",
        str(receipt),
        "--format",
        "json",
        *([] if run else ["--no-run"]),
    ]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(runner.root),
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "*",
    }

    def go() -> None:
        receipt.unlink(missing_ok=True)
        proc = subprocess.run(argv, capture_output=True, env=env, check=False)
        if not receipt.exists():
            raise SystemExit(f"no receipt from the host CLI: {proc.stderr.decode(errors='replace')[-2000:]}")

    return go


def _action_run(engine: Engine, runner: Runner, image: str = IMAGE) -> Callable[[], None]:
    def go() -> None:
        github = FakeGitHub(SHARED).start()
        results = FakeResultsService(runtime_token()).start()
        try:
            for name in ("set_output", "step_summary"):
                runner.file(f"file_commands/{name}").write_text("", encoding="utf-8")
            proc = run_container(engine, image, runner, action_env(github, results))
            if proc.returncode != 10 or len(github.runs) != 1 or not results.state.finalized:
                raise SystemExit(f"the action did not post its verdict: {proc.stdout.decode(errors='replace')}")
        finally:
            github.stop()
            results.stop()

    return go


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-cold-build", action="store_true", help="skip the --no-cache build")
    parser.add_argument("--only-prebuilt", action="store_true", help="only the build-vs-prebuilt comparison")
    args = parser.parse_args()
    engine = find_engine()
    if engine is None:
        raise SystemExit("neither docker nor podman is installed")
    if args.only_prebuilt:
        build_image(engine)
        prebuilt = prebuilt_vs_build(engine, args.repeat)
        OUT.mkdir(exist_ok=True)
        (OUT / "container-prebuilt.json").write_text(json.dumps(prebuilt, indent=2) + "\n", encoding="utf-8")
        print(render_prebuilt(prebuilt))
        return 0
    pinned = next(
        line.split()[1]
        for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines()
        if line.startswith("FROM ") and line.endswith(" AS pinned-base")
    )
    base = ensure_base(engine) or pinned
    results: dict[str, Any] = {
        "load_average_before": os.getloadavg(),
        "engine": engine.name,
        "base": base,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "repeat": args.repeat,
    }
    results["build_cached_s"] = build_image(engine)
    if not args.no_cold_build:
        results["build_no_cache_s"] = build_image(engine, no_cache=True)
    results["rebuild_after_source_change_s"] = rebuild_after_touch(engine)
    size = image_size(engine, IMAGE)
    base_size = image_size(engine, base)
    results.update(image_bytes=size, base_bytes=base_size, added_bytes=size - base_size)

    timings: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="evidence-gate-bench-") as tmp:
        for pr, run in (("freeze-entry-added", False), ("honest-refactor", True)):
            runner = make_runner(Path(tmp) / pr, pr)
            label = f"{pr} ({'properties run' if run else '--no-run'})"
            timings[label] = _paired(_host_check(runner, run), _container_check(engine, runner, run), args.repeat)
        runner = make_runner(Path(tmp) / "action", "freeze-entry-added")
        timings["freeze-entry-added (full action: check run, annotations, artifact)"] = {
            "container_s": _median(_action_run(engine, runner), args.repeat)
        }
    results["timings"] = timings
    results["prebuilt"] = prebuilt_vs_build(engine, args.repeat)
    results["load_average_after"] = os.getloadavg()
    OUT.mkdir(exist_ok=True)
    (OUT / "container.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(render(results))
    print()
    print(render_prebuilt(results["prebuilt"]))
    return 0


def prebuilt_vs_build(engine: Engine, repeat: int) -> dict[str, Any]:
    """Start to verdict of the full action from an empty store: build-then-run against pull-then-run."""
    if engine.name != "podman":
        return {"skipped": "needs podman: an empty image store of its own cannot be made on a shared docker daemon"}
    out: dict[str, Any] = {"repeat": repeat, "load_average_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="evidence-gate-registry-") as tmp, local_registry(Path(tmp)) as registry:
        base = f"{registry}/library/debian:trixie-slim"
        published = f"{registry}/octo-org/evidence-gate"
        engine.run("push", "--tls-verify=false", LOCAL_BASE, base, timeout=900)
        digest_file = Path(tmp) / "digest"
        engine.run(
            "push", "--tls-verify=false", "--digestfile", str(digest_file), IMAGE, f"{published}:v1", timeout=900
        )
        reference = f"{published}@{digest_file.read_text(encoding='utf-8').strip()}"
        out["reference"] = reference
        runner = make_runner(Path(tmp) / "action", "freeze-entry-added")
        builds: list[dict[str, float]] = []
        pulls: list[dict[str, float]] = []
        for i in range(repeat):  # alternated, so both see the same load
            builds.append(_from_empty(engine, Path(tmp) / f"b{i}", runner, lambda e: _build_from(e, base)))
            pulls.append(_from_empty(engine, Path(tmp) / f"p{i}", runner, lambda e: _pull(e, reference)))
    for label, rows in (("build", builds), ("prebuilt", pulls)):
        out[label] = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    out["ratio"] = out["prebuilt"]["total_s"] / out["build"]["total_s"]
    out["load_average_after"] = os.getloadavg()
    return out


def _build_from(engine: Engine, base: str) -> str:
    tag = "localhost/evidence-gate:bench-fresh"
    engine.run(
        "build",
        "--no-cache",
        "--pull=always",
        "--tls-verify=false",
        "--network=host",
        "--build-arg",
        f"BASE={base}",
        "-t",
        tag,
        str(ROOT),
        timeout=1800,
    )
    return tag


def _pull(engine: Engine, reference: str) -> str:
    engine.run("pull", "--tls-verify=false", "--quiet", reference, timeout=900)
    return reference


def _from_empty(engine: Engine, root: Path, runner: Runner, prepare: Callable[[Engine], str]) -> dict[str, float]:
    """Seconds to get the image into an empty store, then to run the action to its verdict."""
    with empty_store(engine, root) as fresh:
        start = time.perf_counter()
        image = prepare(fresh)
        ready = time.perf_counter()
        _action_run(fresh, runner, image)()
        done = time.perf_counter()
    return {"image_s": ready - start, "run_s": done - ready, "total_s": done - start}


def render_prebuilt(results: dict[str, Any]) -> str:
    """The README table of the prebuilt-image comparison."""
    if "skipped" in results:
        return f"Prebuilt image: not measured ({results['skipped']})."
    build, pulled = results["build"], results["prebuilt"]
    return "\n".join(
        [
            f"From an empty image store, medians of {results['repeat']} alternated runs, registry on 127.0.0.1 "
            f"(load average {results['load_average_before'][0]:.1f} before, {results['load_average_after'][0]:.1f} after; "
            "`python bench/bench_container.py --only-prebuilt`).",
            "",
            "| `uses:` the action | image ready | action to verdict | start to verdict |",
            "|---|---:|---:|---:|",
            f"| builds the Dockerfile (base pulled, apt, no cache) | {build['image_s']:.1f} s | {build['run_s']:.1f} s | "
            f"{build['total_s']:.1f} s |",
            f"| pulls the release's image by digest | {pulled['image_s']:.1f} s | {pulled['run_s']:.1f} s | "
            f"{pulled['total_s']:.1f} s |",
            "",
            f"Prebuilt / build: **{results['ratio']:.2f}**.",
        ]
    )


def rebuild_after_touch(engine: Engine) -> float:
    """A rebuild after a source change (in a copy of the build context): the apt layer is reused, COPY misses."""
    with tempfile.TemporaryDirectory(prefix="evidence-gate-context-") as tmp:
        context = Path(tmp)
        for name in ("Dockerfile", "entrypoint", ".dockerignore"):
            shutil.copy2(ROOT / name, context / name)
        shutil.copytree(
            ROOT / "src" / "evidence_gate",
            context / "src" / "evidence_gate",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        with (context / "src" / "evidence_gate" / "__init__.py").open("a", encoding="utf-8") as handle:
            handle.write(f"# bench {time.time_ns()}\n")
        seconds = build_image(engine, tag="localhost/evidence-gate:bench-rebuild", context=context)
    engine.run("rmi", "localhost/evidence-gate:bench-rebuild", check=False)
    return seconds


def render(results: dict[str, Any]) -> str:
    """The README table."""
    mb = 1e6
    lines = [
        f"Engine {results['engine']}, {results['cpus']} cores, medians of {results['repeat']} runs, host and "
        "container runs alternated; overhead is the median of the paired differences "
        f"(load average {results['load_average_before'][0]:.1f} before, "
        f"{results['load_average_after'][0]:.1f} after; `python bench/bench_container.py`).",
        "",
        "| image | |",
        "|---|---|",
        f"| size | {int(results['image_bytes']) / mb:.0f} MB (base {int(results['base_bytes']) / mb:.0f} MB) |",
        f"| added over the base | {int(results['added_bytes']) / mb:.0f} MB |",
    ]
    if "build_no_cache_s" in results:
        lines.append(f"| build from a warm base, no layer cache | {results['build_no_cache_s']:.1f} s |")
    lines.append(f"| rebuild after a source change | {results['rebuild_after_source_change_s']:.1f} s |")
    lines += ["", "| demo pull request | host CLI | container | overhead |", "|---|---|---|---|"]
    for label, t in results["timings"].items():
        if "host_cli_s" in t:
            lines.append(f"| {label} | {t['host_cli_s']:.2f} s | {t['container_s']:.2f} s | {t['overhead_s']:+.2f} s |")
        else:
            lines.append(f"| {label} | | {t['container_s']:.2f} s | |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
