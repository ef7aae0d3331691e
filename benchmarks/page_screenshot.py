"""The README's picture of the page: a real `perspectrum serve`, one claim, Debian's chromium.

    python -m benchmarks.page_screenshot "claim" [--out docs/page.png] [--width 1280] [--height 1100]

Starts the server as ``python -m benchmarks.bench_serve`` does (the models and indexes `discover`
would use), opens the claim's permalink in headless chromium driven by selenium, waits
for the answer, opens the first cluster's other phrasings and saves a PNG of the window.
"""

from __future__ import annotations

import argparse
import urllib.parse
from pathlib import Path

from benchmarks.bench_serve import ROOT, start_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("claim")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "page.png")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1100)
    args = parser.parse_args()

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    process, base, _ = start_server(workers=1, queue=4)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                 f"--window-size={args.width},{args.height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(f"{base}/?claim={urllib.parse.quote(args.claim)}")
        WebDriverWait(driver, 120).until(lambda d: d.find_elements(By.CSS_SELECTOR, "li.cluster"))
        first = driver.find_elements(By.CSS_SELECTOR, "li.cluster details.phrasings summary")
        if first:
            first[0].click()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(args.out))
        print(f"wrote {args.out}")
    finally:
        driver.quit()
        process.terminate()
        process.wait(30)


if __name__ == "__main__":
    main()
