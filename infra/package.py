"""Build the Lambda deployment artifact (``jentrix package``; ``python -m infra.package``).

The artifact is ``build/lambda/`` (the template's ``CodeUri``) plus ``build/lambda.zip`` and
``build/lambda/manifest.json`` (platform, sizes, packages). It holds

* the project's **runtime** dependencies only, at the versions of the lock
  ``requirements/runtime.txt`` (``[project].dependencies`` of pyproject.toml resolved by
  ``scripts/lock.sh``, at the same versions as ``requirements/dev.txt``, which the tests and CI
  install), installed by pip with ``--require-hashes --no-deps`` from wheels for the target
  platform: ``--platform manylinux2014_aarch64 --python-version 3.12 --implementation cp
  --only-binary=:all:`` for Lambda (arm64), or the running interpreter's own platform with
  ``--platform host`` (what tests import locally). The build refuses to run when this
  interpreter's pydantic differs from the lock's, because the catalog manifest it writes is
  keyed to the pydantic version that renders it (:func:`check_host_matches_lock`);
* the code the functions import: ``domain/`` and ``functions/`` minus the entry points that
  never run on Lambda (the CLI, the stdio adapter and bridge).

Nothing of the dev stack goes in: uvicorn, httpx2, click, the MCP SDK, pytest are extras
(``.[local]``, ``.[test]``). setuptools arrives only as a stale declared dependency of
``fractional-indexing``, which never imports it; it is removed (with ``pkg_resources`` and
``_distutils_hack``), as are ``bin/`` scripts and bytecode caches.

boto3/botocore are bundled by default (``--no-sdk`` leaves them to the runtime): see
docs/deploy.md, "boto3: bundled". Bundled botocore keeps only the service models the functions
create clients for (:data:`SDK_SERVICES`; 5 of ~450 directories, ~23 MB less) and only their
entries of ``endpoints.json`` (:func:`slim_botocore`); a client for any other service fails with
``UnknownServiceError``, which tests/test_package.py would show.

Bytecode is compiled ahead (``--invalidation-mode unchecked-hash``: the zip's timestamps
cannot invalidate it) with a Python of the target's version when one is found (``python3.12``
on PATH or under pyenv), because ``/var/task`` is read-only and every cold start would
otherwise compile each imported module again; without one the artifact ships sources only and
says so in its manifest.

A wheel missing for the target platform makes pip fail (``--only-binary=:all:`` never builds
from source for a foreign platform); the error names the package. PyStemmer is the one C
extension with a pure-Python fallback (snowballstemmer), so ``--skip-missing PyStemmer``
builds without it when a mirror lacks its arm64 wheel.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAMBDA_PLATFORM = ("manylinux2014_aarch64", "3.12")
SDK = ("boto3", "botocore", "s3transfer")  # what the Lambda Python runtime provides itself
NEVER = ("setuptools", "pkg_resources", "_distutils_hack")  # see the module docstring
SKIP_FUNCTIONS = ("cli.py", "cli_governance.py", "stdio_adapter.py", "stdio", "local_gateway.py")
# The clients the functions create, plus X-Ray's (its SDK makes one for central sampling when
# it does not detect Lambda; tiny).
SDK_SERVICES = ("dynamodb", "dynamodbstreams", "s3", "sts", "xray")


def slim_botocore(target: Path) -> dict[str, int]:
    """Keep only what the functions' clients load from ``target/botocore/data``.

    * the service model directories of :data:`SDK_SERVICES` (the others are deleted);
    * in ``endpoints.json`` (1.25 MB, parsed whole by every botocore session's first client:
      ~50-100 ms of a cold start), the entries of those services' endpoint prefixes, read from
      their own ``service-2`` metadata, in every partition; the partitions' regions, defaults and
      DNS suffixes stay. A client of a service not kept fails either way (its model is gone).

    Returns ``{"services": kept, "endpointsBytes": size after}``; a tree without botocore data
    is left alone (``--no-sdk``). Also used by ``benchmarks.cold_start`` so that every side it
    measures imports the botocore the artifact ships."""
    data = target / "botocore" / "data"
    if not data.is_dir():
        return {"services": 0, "endpointsBytes": 0}
    prefixes: set[str] = set()
    for entry in sorted(data.iterdir()):
        if not entry.is_dir():
            continue
        if entry.name not in SDK_SERVICES:
            shutil.rmtree(entry)
            continue
        latest = max(p for p in entry.iterdir() if p.is_dir())
        prefixes.add(_service_metadata(latest)["endpointPrefix"])
    endpoints = data / "endpoints.json"
    if endpoints.exists():
        table = json.loads(endpoints.read_text())
        for partition in table["partitions"]:
            partition["services"] = {k: v for k, v in partition["services"].items() if k in prefixes}
        endpoints.write_text(json.dumps(table, separators=(",", ":")))
    return {"services": len(prefixes), "endpointsBytes": endpoints.stat().st_size if endpoints.exists() else 0}


def _service_metadata(version_dir: Path) -> dict:
    plain = version_dir / "service-2.json"
    if plain.exists():
        return json.loads(plain.read_text())["metadata"]
    with gzip.open(version_dir / "service-2.json.gz", "rt") as fh:
        return json.load(fh)["metadata"]


def _interpreter_for(version: str) -> str | None:
    """A Python ``version`` (e.g. "3.12") to compile bytecode with, if this machine has one."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    pyenv = Path.home() / ".pyenv" / "versions"
    candidates = [shutil.which(f"python{version}")]
    candidates += (
        [str(c) for c in sorted(pyenv.glob(f"{version}.*/bin/python{version}"), reverse=True)] if pyenv.is_dir() else []
    )
    for candidate in filter(None, candidates):
        try:  # a pyenv shim exists on PATH even when that version is not selected
            if subprocess.run([candidate, "-c", "pass"], capture_output=True, timeout=30).returncode == 0:
                return candidate
        except OSError:
            continue
    return None


def _compile(target: Path, python: str) -> None:
    subprocess.run(
        [python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(target)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


LOCK = ROOT / "requirements" / "runtime.txt"


def locked(path: Path = LOCK) -> list[str]:
    """The lock's entries, each one requirement line as pip reads it (``name==version [; marker]
    --hash=sha256:...``, continuation lines joined), in file order."""
    entries: list[str] = []
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line[0].isspace() and entries:
            entries[-1] = entries[-1].rstrip("\\ ").rstrip() + " " + stripped.rstrip("\\ ").rstrip()
        else:
            entries.append(stripped.rstrip("\\ ").rstrip())
    return entries


def canonical(name: str) -> str:
    """PEP 503 name: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(path: Path = LOCK) -> dict[str, str]:
    """``{canonical name: version}`` of the lock."""
    out = {}
    for entry in locked(path):
        name, _, rest = entry.partition("==")
        out[canonical(name)] = re.split(r"[ ;]", rest, maxsplit=1)[0]
    return out


def runtime_requirements(*, sdk: bool = True, skip: tuple[str, ...] = ()) -> list[str]:
    """The lock's entries to install (with their hashes), minus the SDK without ``sdk`` and ``skip``."""
    doomed = {canonical(s) for s in skip} | ({canonical(s) for s in SDK} if not sdk else set())
    return [entry for entry in locked() if canonical(entry.partition("==")[0]) not in doomed]


def check_host_matches_lock() -> None:
    """Refuse to build when this interpreter's pydantic is not the lock's: the catalog manifest
    written into the artifact is keyed to the pydantic version that renders it, and one made
    with another version is ignored by the function (every tool module imported at a cold start).

    Raises:
        SystemExit: naming both versions and the command that fixes it.
    """
    from importlib.metadata import version

    want, have = pinned()["pydantic"], version("pydantic")
    if want != have:
        raise SystemExit(
            f"pydantic {have} is installed here but the lock bundles {want}: install the lock first "
            "(.venv/bin/pip install --require-hashes -r requirements/dev.txt), then package."
        )


def _pip(target: Path, requirements: list[str], platform: str) -> None:
    lock = target.parent / f".{target.name}-requirements.txt"
    lock.write_text("\n".join(requirements) + "\n")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-compile",
        "--no-warn-conflicts",
        "--disable-pip-version-check",
        "--require-hashes",
        "--no-deps",
        "--target",
        str(target),
    ]
    if platform == "arm64":
        plat, pyver = LAMBDA_PLATFORM
        cmd += ["--platform", plat, "--python-version", pyver, "--implementation", "cp", "--only-binary=:all:"]
    else:
        cmd += ["--only-binary=:all:"]
    try:
        subprocess.run([*cmd, "-r", str(lock)], check=True)
    finally:
        lock.unlink(missing_ok=True)


def _prune(target: Path, *, sdk: bool) -> None:
    doomed = list(NEVER) + ([] if sdk else list(SDK))
    for entry in list(target.iterdir()):
        base = re.split(r"-\d", entry.name, maxsplit=1)[0].replace("-", "_").lower()
        if entry.name == "bin" or base in doomed or entry.name.lower().startswith(tuple(f"{d}-" for d in doomed)):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        elif entry.name.endswith(".pth") and "distutils" in entry.name:
            entry.unlink()
    for cache in list(target.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)


def _copy_code(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "domain", target / "domain", ignore=ignore)
    shutil.copytree(
        ROOT / "functions", target / "functions", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", *SKIP_FUNCTIONS)
    )
    # The registry a cold start lists tools from (domain.catalog, "the manifest"), made afresh from
    # the sources just copied. Its hash includes the pydantic version: if the bundled pydantic
    # differs from this machine's, the function ignores it and imports every tool module instead.
    from domain.catalog import render_manifest

    (target / "domain" / "catalog_manifest.json").write_text(render_manifest(), encoding="utf-8")


def _tree_size(target: Path) -> int:
    return sum(p.stat().st_size for p in target.rglob("*") if p.is_file())


def _zip(target: Path, archive: Path) -> None:
    archive.unlink(missing_ok=True)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for path in sorted(p for p in target.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(str(path.relative_to(target)), date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes(), compresslevel=9)


def versions(target: Path) -> dict[str, str]:
    """``{canonical name: version}`` of the distributions installed in ``target``."""
    found = {}
    for info in sorted(target.glob("*.dist-info")):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        found[canonical(name)] = version
    return found


def distributions(target: Path) -> dict[str, list[str]]:
    """``{distribution name: [wheel tags]}`` from the installed ``*.dist-info/WHEEL`` files."""
    found: dict[str, list[str]] = {}
    for wheel in sorted(target.glob("*.dist-info/WHEEL")):
        name = wheel.parent.name.split("-", 1)[0]  # <name>-<version>.dist-info
        found[name] = [
            line.split(":", 1)[1].strip() for line in wheel.read_text().splitlines() if line.startswith("Tag:")
        ]
    return found


def source_key(*, platform: str = "arm64", sdk: bool = True, skip: tuple[str, ...] = ()) -> str:
    """sha256 (hex) of everything an artifact is made from: the lock, this recipe, the options,
    and every file under ``domain/`` and ``functions/``. Two builds with the same key hold the
    same distributions and code, so ``--cache`` may copy one instead of building again."""
    import hashlib

    digest = hashlib.sha256(
        json.dumps([platform, sdk, sorted(skip), sys.version_info[:2] if platform == "host" else None]).encode()
    )
    files = [LOCK, Path(__file__).resolve()]
    for top in ("domain", "functions"):
        files += sorted(
            p for p in (ROOT / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        )
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build(
    out: Path, *, platform: str = "arm64", sdk: bool = True, skip: tuple[str, ...] = (), archive: Path | None = None
) -> dict:
    """Build the artifact in ``out`` (replaced) and its zip (``archive``, default ``out`` with
    ``.zip``); return the manifest."""
    if platform not in ("arm64", "host"):
        raise ValueError("platform is arm64 (Lambda) or host")
    key = source_key(platform=platform, sdk=sdk, skip=skip)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    check_host_matches_lock()
    requirements = runtime_requirements(sdk=sdk, skip=skip)
    _pip(out, requirements, platform)
    _prune(out, sdk=sdk)
    slim_botocore(out)
    _copy_code(out)
    version = LAMBDA_PLATFORM[1] if platform == "arm64" else f"{sys.version_info.major}.{sys.version_info.minor}"
    compiler = _interpreter_for(version)
    if compiler:
        _compile(out, compiler)
    archive = archive or out.with_suffix(".zip")
    manifest = {
        "platform": "manylinux2014_aarch64 / cp312"
        if platform == "arm64"
        else f"host / cp{sys.version_info.major}{sys.version_info.minor}",
        "sdkBundled": sdk,
        "sdkServices": list(SDK_SERVICES) if sdk else None,
        "bytecode": f"cpython {version} (unchecked-hash)"
        if compiler
        else "none: no Python " + version + " on this machine",
        "skipped": list(skip),
        "sourceKey": key,
        "lock": str(LOCK.relative_to(ROOT)),
        "requirements": [entry.split(" --hash", 1)[0] for entry in requirements],
        "versions": versions(out),
        "distributions": distributions(out),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    manifest["unzippedBytes"] = _tree_size(out)
    _zip(out, archive)
    manifest["zippedBytes"] = archive.stat().st_size
    manifest["zip"] = str(archive)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _replace_with_copy(source: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source, out, symlinks=True)


def build_cached(
    out: Path,
    cache: Path,
    *,
    platform: str = "arm64",
    sdk: bool = True,
    skip: tuple[str, ...] = (),
    archive: Path | None = None,
) -> dict:
    """``out`` as :func:`build` makes it, through ``cache``: when ``cache/manifest.json`` carries
    this build's :func:`source_key` the cached tree is copied, otherwise the artifact is built in
    ``cache`` (its zip at ``archive``) and then copied. ``sam build`` builds each of the three
    functions separately (infra/sam/Makefile); this makes that one build and two copies."""
    key = source_key(platform=platform, sdk=sdk, skip=skip)
    cached = cache / "manifest.json"
    manifest = json.loads(cached.read_text()) if cached.exists() else {}
    if manifest.get("sourceKey") != key:
        manifest = build(cache, platform=platform, sdk=sdk, skip=skip, archive=archive)
    if out.resolve() != cache.resolve():
        _replace_with_copy(cache, out)
    return manifest


def unpack(archive: Path, out: Path) -> dict:
    """Replace ``out`` by the tree of a kept ``lambda.zip`` (what ``jentrix package`` zipped) and
    return its manifest; a zip without ``manifest.json`` is refused (not one of ours).

    Raises:
        SystemExit: the zip is missing or holds no manifest."""
    if not archive.is_file():
        raise SystemExit(f"{archive}: no such artifact (build one with `jentrix package`)")
    with zipfile.ZipFile(archive) as zf:
        if "manifest.json" not in zf.namelist():
            raise SystemExit(f"{archive} holds no manifest.json: not an artifact of `jentrix package`")
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        zf.extractall(out)
    return json.loads((out / "manifest.json").read_text())


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--platform",
        choices=["arm64", "host"],
        default="arm64",
        help="arm64: Lambda's manylinux2014_aarch64 + Python 3.12 (default); host: this interpreter",
    )
    p.add_argument(
        "--out",
        default=str(ROOT / "build" / "lambda"),
        help="output directory (default build/lambda, the template's CodeUri)",
    )
    p.add_argument("--no-sdk", action="store_true", help="leave boto3/botocore/s3transfer to the Lambda runtime")
    p.add_argument(
        "--skip-missing",
        action="append",
        default=[],
        metavar="DIST",
        help="leave out a dependency with a fallback (PyStemmer)",
    )
    p.add_argument("--archive", default=None, help="where the zip goes (default: the output directory's name + .zip)")
    p.add_argument(
        "--cache",
        default=None,
        metavar="DIR",
        help="build in DIR unless it already holds this exact build (same lock, code, options), then copy it to --out",
    )
    p.add_argument(
        "--unpack", default=None, metavar="ZIP", help="fill --out from a kept lambda.zip instead of building"
    )


def run(args: argparse.Namespace) -> int:
    out, archive = Path(args.out), Path(args.archive) if args.archive else None
    options = {"platform": args.platform, "sdk": not args.no_sdk, "skip": tuple(args.skip_missing)}
    if args.unpack:
        manifest = unpack(Path(args.unpack), out)
        print(
            f"{args.out}: unpacked {args.unpack} ({manifest['platform']}, {len(manifest['distributions'])} distributions)"
        )
        return 0
    if args.cache:
        manifest = build_cached(out, Path(args.cache), archive=archive, **options)
    else:
        manifest = build(out, archive=archive, **options)
    mb = lambda n: f"{n / 1_000_000:.1f} MB"  # noqa: E731
    print(
        f"{args.out}: {manifest['platform']}, {len(manifest['distributions'])} distributions, "
        f"{mb(manifest['unzippedBytes'])} unzipped, {mb(manifest['zippedBytes'])} zipped ({manifest['zip']})"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.package", description="Build the Lambda artifact from runtime dependencies only."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
