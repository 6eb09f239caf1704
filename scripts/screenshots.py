"""Screenshots of every page, whole, at 1024x768 and 1920x1080 into docs/screenshots/ (PAGE-1024.png,
PAGE-1920.png), taken by the repository's own browser check (tools/ui_check.py, headless Chromium)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, str(ROOT / "tools" / "ui_check.py"), str(ROOT / "app.py"), "--python", sys.executable,
               "--cwd", str(ROOT), "--out", tmp, "--width", "1024", "--height", "768", "--also-size", "1920x1080",
               "--full-page", "--page-timeout", "90", "--total-timeout", "600"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if not r.stdout.strip().startswith("{"):
            print(f"the browser check gave no summary: {r.stderr[-500:]}", file=sys.stderr)
            return 1
        OUT.mkdir(parents=True, exist_ok=True)
        for page in json.loads(r.stdout)["pages"]:
            name = page["path"].strip("/") or "home"
            shutil.copyfile(page["screenshot"]["path"], OUT / f"{name}-1024.png")
            for size in page["sizes"]:
                shutil.copyfile(size["screenshot"]["path"], OUT / f"{name}-{size['size'].split('x')[0]}.png")
            print(f"{name}: {', '.join(f'{name}-{w}.png' for w in ('1024', '1920'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
