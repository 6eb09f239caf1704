"""`make space-check`: build the Hugging Face Space's image as the Hub would, and check it like CI (docs/serving.md).

Debian's buildah builds the Dockerfile from this checkout (--isolation chroot, vfs storage: no daemon). Where the
registry cannot be reached, the base (python:3.11-slim) is a stand-in made from Debian bookworm's packages with
mmdebstrap (bookworm's python3 is 3.11); where the PyTorch wheel index cannot, torch comes from the CPU wheel pip
finds without an index, mounted into the build for that step only. The Dockerfile stays the Hub's, and the output
names each stand-in. The image then starts as a Space starts it: its CMD, as uid 1000, on the README's app_port, in
a network namespace of its own (loopback only: the app needs no network, and the port cannot clash with a server
on this machine). tools/ui_check.py waits for its health, decodes live once and opens three pages in Chromium;
every page must be free of exception and error boxes, and Home must say that the C++ kernel is loaded.

One line at the end, exit 0 only if all of it passed. Needs root (buildah's chroot, mmdebstrap). Its storage (about
6 GB while it runs) is removed at the end unless --keep; its logs and screenshots stay in --work."""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "localhost/paradec-space"
STANDIN = "localhost/paradec-standin:bookworm"
REGISTRY = "https://registry-1.docker.io/v2/"  # where the Hub's builder pulls python:3.11-slim from
DEBIAN = ["deb http://deb.debian.org/debian bookworm main", "deb http://deb.debian.org/debian bookworm-updates main",
          "deb http://deb.debian.org/debian-security bookworm-security main"]
STANDIN_PACKAGES = "python3,python3-venv,ca-certificates"  # what the official base has: a Python that makes venvs
LIVE = "/pld?source=live"  # a live run (prompt lookup and its AR baseline), first: it loads the model and the kernel
PAGES = ["/", "/eagle?step=3", "/roofline"]
RUN_LIVE = "Run live on these settings"
LIVE_DONE = "AR on this prompt and these settings"  # the speed-up line a finished live run shows
KERNEL_LOADED = "CPU kernel: loaded."  # Home's line (ui/live.py) once this server has loaded the kernel


class Failed(Exception):
    """A step that failed, in one line."""


def say(text: str) -> None:
    print(f"space-check: {text}", file=sys.stderr, flush=True)


def front_matter_port() -> int:
    lines = (ROOT / "README.md").read_text().splitlines()
    header = lines[1:lines.index("---", 1)]
    return int(next(line.split(":", 1)[1] for line in header if line.startswith("app_port:")))


def dockerfile_arg(dockerfile: Path, name: str) -> str:
    found = re.search(rf"^ARG {name}=(\S+)", dockerfile.read_text(), re.M)
    if not found:
        raise Failed(f"{dockerfile} has no ARG {name}=...")
    return found.group(1)


def base_image(dockerfile: Path) -> str:
    """The first FROM's image, named in full as Docker reads a short name (python:3.11-slim: Docker Hub's)."""
    name = re.search(r"^FROM\s+(\S+)", dockerfile.read_text(), re.M | re.I).group(1)
    first = name.split("/")[0]
    if "/" in name and ("." in first or ":" in first or first == "localhost"):
        return name
    return f"docker.io/{name if '/' in name else 'library/' + name}"


def reachable(url: str) -> bool:
    """Whether the URL answers at all (a registry's 401 is an answer)."""
    try:
        urllib.request.urlopen(url, timeout=15).close()
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False
    return True


def sh(cmd: list[str], log: Path | None = None, **kw) -> str:
    """Run a command; its output (or the log's last line, for a long one) in the one line of a failure."""
    if log is None:
        done = subprocess.run(cmd, capture_output=True, text=True, **kw)
        out = done.stdout + done.stderr
    else:
        with log.open("a") as f:
            done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True, **kw)
        out = log.read_text(errors="replace")
    if done.returncode:
        lines = [line for line in out.splitlines() if line.strip()] or ["no output"]
        raise Failed(f"{shlex.join(cmd[:6])}... failed: {lines[-1][:300]}" + (f" (log: {log})" if log else ""))
    return done.stdout if log is None else ""


def standin(b: list[str], work: Path) -> str:
    """python:3.11-slim's stand-in: Debian bookworm's minimal system with its python3, as an image in the store."""
    tar = work / "standin.tar"
    say("the registry is out of reach: making a stand-in for the base from Debian bookworm (mmdebstrap, ~2 min)")
    sh(["mmdebstrap", "--quiet", "--variant=minbase", f"--include={STANDIN_PACKAGES}", "bookworm", str(tar), *DEBIAN],
       work / "standin.log")
    ctr = sh([*b, "from", "scratch"]).strip()
    sh([*b, "add", ctr, str(tar), "/"])
    sh([*b, "config", "--env", "LANG=C.UTF-8", "--cmd", "python3", ctr])
    sh([*b, "commit", "-q", "--rm", ctr, STANDIN])
    tar.unlink()
    return STANDIN


def local_torch(work: Path) -> Path:
    """A wheel index of the pinned torch's CPU wheel, found by pip without an index (its find-links), and the
    wheels it depends on: what the CPU index would have served."""
    pin = next(line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
               if line.startswith("torch=="))
    wheels, index = work / "wheels", work / "index"
    pip = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(wheels)]
    try:
        sh([*pip, "--no-index", "--no-deps", pin])
    except Failed as e:
        raise Failed(f"the PyTorch index is out of reach, and pip finds no {pin} wheel without it: {e}") from None
    torch = next(wheels.glob("torch-*.whl"))
    if "+cpu" not in torch.name:
        raise Failed(f"the torch wheel pip finds here is not a CPU build: {torch.name}")
    sh([*pip, str(torch)])
    for wheel in wheels.glob("*.whl"):
        project = index / re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
        project.mkdir(parents=True, exist_ok=True)
        shutil.copy(wheel, project / wheel.name)
    for project in index.iterdir():  # PEP 503: a page of links per project
        links = [f'<a href="{urllib.parse.quote(w.name)}">{w.name}</a>' for w in sorted(project.glob("*.whl"))]
        (project / "index.html").write_text("\n".join(links) + "\n")
    return index


def trust(work: Path) -> list[str]:
    """The build's pip trusts what this machine's pip trusts (a proxy's CA): its bundle and a pip.conf naming it,
    mounted for the build's steps only. None where pip names no bundle of its own."""
    cert = os.environ.get("PIP_CERT") or subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.cert"],
                                                        capture_output=True, text=True).stdout.strip()
    if not cert or not Path(cert).is_file():
        return []
    conf = work / "pip.conf"
    conf.write_text("[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n")
    return ["-v", f"{cert}:/etc/ssl/certs/ca-certificates.crt:ro", "-v", f"{conf}:/etc/pip.conf:ro"]


def build(b: list[str], work: Path, dockerfile: Path) -> tuple[list[str], float]:
    """The image, built; what stood in for what the Hub reaches, and the build's seconds."""
    stood, base = [], base_image(dockerfile)
    if reachable(REGISTRY):
        args = ["--from", base]
    else:
        args = ["--pull=never", "--from", standin(b, work)]
        stood.append(f"base: a stand-in for {base} from Debian bookworm (mmdebstrap)")
    if not reachable(dockerfile_arg(dockerfile, "TORCH_INDEX")):
        args += ["-v", f"{local_torch(work)}:/wheels:ro", "--build-arg", "TORCH_INDEX=file:///wheels"]
        stood.append("torch: this machine's CPU wheel (the CPU index is out of reach)")
    log = work / "build.log"
    say(f"building the image (6-10 min on 2 cores; log: {log})")
    t0 = time.monotonic()
    try:
        sh([*b, "bud", "--isolation", "chroot", *args, *trust(work), "-f", str(dockerfile), "-t", IMAGE, str(ROOT)],
           log)
    except Failed:
        raise Failed(build_failure(log.read_text(errors="replace"))) from None
    return stood, time.monotonic() - t0


def build_failure(log: str) -> str:
    """A failed build in one line: the step buildah names, and that step's last words (buildah's own last lines
    say only that it exited)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    step = next((line for line in reversed(lines) if line.startswith("Error:")), "Error: the build failed")
    said = next((line for line in reversed(lines) if not line.startswith(("Error:", "subprocess exited"))), "")
    return f"the image did not build. {step[:300]}" + (f"; its last words: {said[:400]}" if said else "")


def serve_and_check(b: list[str], work: Path, port: int) -> dict:
    """The image's CMD as uid 1000 in a network namespace of its own, checked in Chromium by tools/ui_check.py;
    its summary."""
    config = json.loads(sh([*b, "inspect", "--type", "image", IMAGE]))["OCIv1"]["config"]
    ctr = sh([*b, "from", "--name", "paradec-space-check", IMAGE]).strip()
    start = shlex.join([*b, "run", "--isolation", "chroot", "--user", "1000:1000", ctr, "--", *config["Cmd"]])
    summary = work / "ui_check.json"
    check = [sys.executable, str(ROOT / "tools" / "ui_check.py"), "--cmd", start, "--port", str(port),
             "--first", LIVE, "--pages", ",".join(PAGES), "--click", f"{LIVE.lstrip('/')}::{RUN_LIVE}",
             "--expect", f"{LIVE.lstrip('/')}::{LIVE_DONE}", "--expect", f"/::{KERNEL_LOADED}",
             "--startup-timeout", "600", "--page-timeout", "300", "--total-timeout", "1500",
             "--out", str(work / "shots"), "--json", str(summary)]
    say(f"starting the image as uid 1000 and opening it in Chromium (3-5 min; log: {work / 'ui_check.log'})")
    try:
        with (work / "ui_check.log").open("w") as log:
            subprocess.run(["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *check],
                           stdout=subprocess.DEVNULL, stderr=log, timeout=1800)
    finally:
        subprocess.run([*b, "rm", ctr], capture_output=True)
    if not summary.is_file():
        raise Failed("tools/ui_check.py wrote no summary")
    return json.loads(summary.read_text())


def problems(summary: dict) -> list[str]:
    """ui_check's problems, and the error boxes it lists without counting them."""
    found = list(summary.get("problems", []))
    if summary.get("error"):
        lines = [line for line in summary["error"].splitlines() if line.strip()]
        found.append(lines[0][:200] + (f" ... {lines[-1][:300]}" if len(lines) > 1 else ""))
    for page in summary.get("pages", []):
        for at in [page, *page.get("clicks", [])]:
            found += [f"{page['path']}: error box: {text[:200]}" for text in at.get("error_alerts", [])]
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, default=Path("/var/tmp/paradec-space-check"),
                   help="the build's storage and logs (removed at the end unless --keep)")
    p.add_argument("--dockerfile", type=Path, default=ROOT / "Dockerfile", help="another Dockerfile to build")
    p.add_argument("--keep", action="store_true", help="keep the image and the logs in --work")
    a = p.parse_args(argv)
    if os.geteuid() != 0:
        print("space-check: FAILED: it needs root (buildah's chroot isolation, mmdebstrap): run  sudo make "
              "space-check", flush=True)
        return 1
    t0, work = time.monotonic(), a.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    b = ["buildah", "--root", str(work / "storage"), "--runroot", str(work / "run"), "--storage-driver", "vfs"]
    try:
        stood, built_s = build(b, work, a.dockerfile.resolve())
        size = sh([*b, "images", "--format", "{{.Size}}", IMAGE]).strip()
        summary = serve_and_check(b, work, front_matter_port())
        found = problems(summary)
        if found:
            raise Failed(f"{len(found)} problem(s): " + "; ".join(found)[:1500] + f" (screenshots: {work / 'shots'})")
    except Failed as e:
        print(f"space-check: FAILED after {(time.monotonic() - t0) / 60:.1f} min: {e}", flush=True)
        return 1
    finally:
        if not a.keep:  # the storage and the wheels; the logs, the summary and the screenshots stay
            subprocess.run([*b, "rm", "--all"], capture_output=True)
            (work / "standin.tar").unlink(missing_ok=True)
            for gone in ("storage", "run", "wheels", "index"):
                shutil.rmtree(work / gone, ignore_errors=True)
    print(f"space-check: ok in {(time.monotonic() - t0) / 60:.1f} min: built in {built_s / 60:.1f} min ({size}; "
          f"{'; '.join(stood) or 'the Hub base and the CPU index'}), healthy "
          f"{summary.get('server_ready_s', 0):.0f} s after start as uid 1000 on port {front_matter_port()}, a live "
          f"run and {len(PAGES)} pages with 0 exception boxes, the C++ kernel loaded", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
