"""The page, end to end: a real `perspectrum serve` on a free loopback port over the
ten-claim fixture (prepared by `perspectrum setup` first; the server still loads its models
in the background as it starts, so the loading path runs too), driven in Debian's headless
chromium by selenium.

It types a claim, waits for both stance columns and a highlighted evidence window, and
checks the permalink, keyboard use, an error, and a phone-sized viewport; and it maps pasted
texts and a picked file in the map view. Screenshots go
to ``test-artifacts/`` (or ``$PERSPECTRUM_TEST_ARTIFACTS``). Without chromium and
chromium-driver the test is skipped, except under CI (``$CI`` set), where `.ci/run`
installs them and a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_dataset

CLAIM = "Animals should have legal rights"
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
ARTIFACTS = Path(os.environ.get("PERSPECTRUM_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts"))
# what the machine's own check ran chromium with: no sandbox as root, and none of the
# background connections a closed network refuses
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,1000")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (CHROMIUM and CHROMEDRIVER):
        if os.environ.get("CI"):
            pytest.fail("chromium and chromium-driver are missing; .ci/run installs them with apt-get")
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)  # no driver download
    yield driver
    driver.quit()


def _first_line(process: subprocess.Popen, timeout: float) -> str:
    """The server's first line of output (its address), or a failure with what it printed."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not lines or not lines[0]:
        process.kill()
        raise AssertionError(f"`perspectrum serve` printed no address: {process.stderr.read()}")
    return lines[0]


@pytest.fixture(scope="module")
def server(tmp_path_factory, shipped_set) -> Iterator[str]:
    """The base URL of `perspectrum serve --port 0` over a fresh fixture, once /health is ready."""
    root = tmp_path_factory.mktemp("serve")
    data = write_dataset(root / "data")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PERSPECTRUM_CACHE": str(root / "cache")}
    env.pop("PERSPECTRUM_TOKEN", None)
    folders = ["--data-dir", str(data), "--no-verify", "--index-dir", str(root / "indexes"), "--models-dir",
               str(root / "models")]
    # the machine prepared first, as a person would (`serve` would run the same step before listening)
    subprocess.run([sys.executable, "-m", "perspectrum", "setup", *folders], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    command = [sys.executable, "-m", "perspectrum", "serve", "--port", "0", *folders]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = _first_line(process, 60)
        assert line.startswith("serving http://127.0.0.1:"), line
        base = line.split()[1].rstrip("/")
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=5) as answer:
                    health = json.load(answer)
                    break
            except urllib.error.HTTPError as exc:
                assert json.load(exc)["status"] == "loading"
            except urllib.error.URLError:
                pass  # not accepting yet
            assert process.poll() is None and time.monotonic() < deadline, "the server died or never got ready"
            time.sleep(0.5)
        assert health["status"] == "ready" and health["system"] == "shipped"
        yield base
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait(driver, condition, timeout: float = 60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def _answered(driver) -> None:
    """Wait until the answer's cards are on the page (in whichever of the columns, supporting,
    undermining or "side unclear", the fixture's quick models put them)."""
    from selenium.webdriver.common.by import By

    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#support li.cluster, #undermine li.cluster, "
                                                             "#unclear li.cluster"))


def test_the_page_answers_a_claim_in_two_columns_with_highlighted_evidence(server, browser) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver = browser
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.get(f"{server}/")
    examples = _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "button.example"))
    assert CLAIM in [b.text for b in examples]  # the fixture's dev claims are offered
    box = driver.find_element(By.ID, "claim")
    box.send_keys(CLAIM, Keys.ENTER)
    _answered(driver)
    marks = driver.find_elements(By.CSS_SELECTOR, ".cluster .evidence > p mark")  # the window each card shows
    assert marks and all(m.text.strip() for m in marks)
    paragraph = marks[0].find_element(By.XPATH, "..").text
    assert marks[0].text in paragraph and len(marks[0].text) <= len(paragraph)
    cards = [c.text for c in driver.find_elements(By.CSS_SELECTOR, ".cluster")]
    assert cards and not any("ranker" in c or "paragraph 1" in c or " id " in c for c in cards)  # no internals
    assert driver.find_element(By.ID, "result-claim").text == f"“{CLAIM}”"
    permalink = driver.find_element(By.ID, "permalink").get_attribute("href")
    assert permalink == f"{server}/?claim=Animals%20should%20have%20legal%20rights"
    assert driver.current_url == permalink
    bars = driver.find_elements(By.CSS_SELECTOR, ".cluster .bar")
    assert bars and all(b.get_attribute("aria-label").endswith("sure") or "side unclear" in b.get_attribute("aria-label")
                        for b in bars)
    stages = [row.get_attribute("textContent") for row in driver.find_elements(By.CSS_SELECTOR, "#timings tbody th")]
    assert stages[-1] == "total" and "stance" in stages
    fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert fetched and all(url.startswith(f"{server}/") for url in fetched)  # nothing from elsewhere
    driver.save_screenshot(str(ARTIFACTS / "page-desktop.png"))

    # keyboard only: "/" returns to the claim box; Enter opens a collapsed part
    driver.find_element(By.TAG_NAME, "body").send_keys("/")
    assert driver.switch_to.active_element.get_attribute("id") == "claim"
    summaries = driver.find_elements(By.CSS_SELECTOR, "#result summary")
    assert summaries
    for summary in summaries:
        summary.send_keys(Keys.ENTER)
        assert summary.find_element(By.XPATH, "..").get_attribute("open") is not None

    # a claim the server refuses: its one-line reason is shown
    box = driver.find_element(By.ID, "claim")
    box.clear()
    box.send_keys("1234 5678", Keys.ENTER)
    status = _wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#status.error"))
    assert status.text == "claim: the claim has no words in it"


def test_the_permalink_answers_on_a_phone_sized_screen(server, browser) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.set_window_size(390, 844)
    try:
        driver.get(f"{server}/?claim=Animals%20should%20have%20legal%20rights")
        _answered(driver)
        assert driver.find_element(By.ID, "claim").get_attribute("value") == CLAIM
        support = driver.find_element(By.ID, "support").rect
        undermine = driver.find_element(By.ID, "undermine").rect
        assert undermine["y"] >= support["y"] + support["height"]  # one column: stacked, not side by side
        assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        driver.save_screenshot(str(ARTIFACTS / "page-phone.png"))
    finally:
        driver.set_window_size(1280, 1000)


def test_the_api_documentation_renders_from_local_files(server, browser) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    driver.get(f"{server}/docs")
    operations = _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock-summary-path"))
    assert {"/discover", "/search", "/health", "/metrics"} <= {o.text.replace("\u200b", "") for o in operations}
    fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(url.startswith(f"{server}/") for url in fetched)


def test_the_map_page_opens_from_a_file_and_unfolds_its_quotes(browser, tmp_path) -> None:
    """`perspectrum map --html`'s page, opened as a file: cards in order with their bars, quotes
    folded until clicked, a document's markup shown as text, nothing fetched from anywhere."""
    from selenium.webdriver.common.by import By

    from perspectrum.cli.map_page import map_page
    from perspectrum.pipeline.map import MappedPerspective, PerspectiveMap, Quote

    def made(text: str, side: str, docs: int, share: float) -> MappedPerspective:
        quotes = tuple(Quote(f"doc-{n}.txt", 0, len(text), text, 0.8) for n in range(docs))
        return MappedPerspective(text, side, 0.8, docs, docs, share, quotes)

    shown = [made("Animals feel pain and deserve protection in law", "support", 3, 0.75),
             made("Rights come with duties <b>animals</b> cannot bear", "undermine", 2, 0.5)]
    found = PerspectiveMap(CLAIM, 4, 6, shown, [made("Welfare laws already punish cruelty", "unclear", 1, 0.25)],
                           [{"source": "scan.pdf", "why": "an encrypted PDF"}])
    page = tmp_path / "map.html"
    page.write_text(map_page(found), encoding="utf-8")
    driver = browser
    driver.get(page.as_uri())
    cards = driver.find_elements(By.CSS_SELECTOR, "div.p")
    assert [c.find_element(By.CSS_SELECTOR, ".kp").text for c in cards] == [
        "Animals feel pain and deserve protection in law", "Rights come with duties <b>animals</b> cannot bear",
        "Welfare laws already punish cruelty"]
    widths = [c.find_element(By.CSS_SELECTOR, ".bar span").rect["width"] for c in cards]
    assert widths[0] > widths[1] > widths[2] > 0  # bars follow the share of documents
    quote = cards[0].find_element(By.CSS_SELECTOR, "blockquote")
    assert not quote.is_displayed()
    cards[0].find_element(By.TAG_NAME, "summary").click()
    assert quote.is_displayed() and "doc-0.txt" in quote.text
    assert "an encrypted PDF" in driver.find_element(By.TAG_NAME, "body").text
    fetched = driver.execute_script("return performance.getEntriesByType('resource').length")
    assert fetched == 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / "map-page.png"))


def test_the_map_view_reads_a_files_bytes_as_perspectrum_map_does(browser) -> None:
    """The map view's decoder (``decoded`` in map.js), run in chromium on the bytes of text files
    in every encoding `perspectrum map` reads and of those it skips: the same text and encoding
    as :func:`perspectrum.text.reading.decode`, or the same reason (without its byte offset)."""
    import re

    from perspectrum.serve.app import WEB
    from perspectrum.text.document import DocumentError
    from perspectrum.text.reading import decode

    letter = "Chère Hélène, les zoos protègent les espèces menacées — « c’est vrai », dit-elle. Ça suffit 🦁."
    cases = [letter.encode("utf-16"), b"\xfe\xff" + letter.encode("utf-16-be"), letter.encode("utf-32"),
             b"\x00\x00\xfe\xff" + letter.encode("utf-32-be"), letter[:-3].encode("cp1252") + b"\r\n",
             "Ça m'intéresse, Hélène.".encode("latin-1"), letter.encode(), b"\xef\xbb\xbf" + letter.encode(),
             b"zoos \x00\x01 protect", "Les zoos protègent. ".encode() + "Les zoos protègent.".encode("latin-1"),
             b"Zoos \x81\x8d protect animals", b"\xff\xfe" + b"\x00\xd8" * 3, letter.encode("utf-32")[:-1],
             b"\xef\xbb\xbfok \xff", "Зоопарки защищают редкие виды.".encode("cp1251"),
             "动物园保护濒危物种。".encode("gbk")]
    expected = []
    for data in cases:
        try:
            expected.append(list(decode(data)))
        except DocumentError as exc:
            expected.append([None, re.sub(r" \(byte [\d,]+\)", "", str(exc))])
    driver = browser
    driver.get("about:blank")
    script = "\n".join((WEB / name).read_text(encoding="utf-8") for name in ("common.js", "map.js")) + """
        return arguments[0].map((bytes) => {
          try {
            const read = decoded(new Uint8Array(bytes));
            return [read.text, read.encoding];
          } catch (error) {
            return [null, error.message];
          }
        });"""
    assert driver.execute_script(script, [list(data) for data in cases]) == expected


#: Short texts written for this test, one of them with markup that must stay text.
PASTED = ("Zoos protect endangered species through breeding programmes. Several species survive only in zoos.",
          "Breeding programmes in zoos save endangered animals. Keeping animals in cages is cruel, some say.",
          "Keeping animals in <b>cages</b> in zoos is cruel. Their enclosures are far too small.")


def test_the_map_view_maps_pasted_texts_and_a_file(server, browser, tmp_path) -> None:
    """From the main page to the map view; three texts pasted and a picked .txt file (a PDF
    picked beside it is left out with a note): cards most prevalent first with their bars,
    quotes folded until opened, markup in a text shown as text, nothing fetched from elsewhere."""
    from selenium.webdriver.common.by import By

    driver = browser
    driver.get(f"{server}/")
    driver.find_element(By.LINK_TEXT, "Map your documents").click()
    _wait(driver, lambda d: d.current_url == f"{server}/map")
    (tmp_path / "letter.txt").write_text("Zoos protect endangered species from extinction.\n", encoding="utf-8")
    (tmp_path / "scan.pdf").write_bytes(b"%PDF-1.4 not read in the browser")
    driver.find_element(By.ID, "claim").send_keys("Zoos should be banned")
    driver.find_element(By.ID, "texts").send_keys("\n---\n".join(PASTED))
    driver.find_element(By.ID, "files").send_keys(f"{tmp_path / 'letter.txt'}\n{tmp_path / 'scan.pdf'}")
    status = driver.find_element(By.ID, "status")
    assert status.text.startswith("left out scan.pdf: only .txt and .md files are read here")
    driver.find_element(By.ID, "go").click()
    _wait(driver, lambda d: d.find_element(By.ID, "result").is_displayed())
    assert driver.find_element(By.ID, "result-meta").text.startswith("4 documents read")
    assert status.text.startswith("left out scan.pdf") and "error" not in status.get_attribute("class")
    cards = driver.find_elements(By.CSS_SELECTOR, "#perspectives li.cluster, #also li.cluster")
    assert cards
    counts = [int(c.find_element(By.CSS_SELECTOR, ".prevalence").text.split(" of ")[0]) for c in cards]
    assert counts == sorted(counts, reverse=True)  # most prevalent first
    assert all(c.find_element(By.CSS_SELECTOR, ".prevalence").text.split(" of ")[1].startswith("4 documents")
               for c in cards)
    widths = [c.find_element(By.CSS_SELECTOR, ".bar .fill").rect["width"] for c in cards]
    assert widths == sorted(widths, reverse=True) and widths[-1] > 0  # bars follow the share of documents
    quote = cards[0].find_element(By.CSS_SELECTOR, "blockquote")
    assert not quote.is_displayed()
    cards[0].find_element(By.TAG_NAME, "summary").click()
    assert quote.is_displayed()
    cited = quote.find_element(By.TAG_NAME, "cite").text
    assert cited.split(",")[0] in {"pasted 1", "pasted 2", "pasted 3", "letter.txt"} and "characters" in cited
    # markup in a text is text: no element made from it, its tags shown where it is quoted
    assert not driver.find_elements(By.CSS_SELECTOR, "#result b")
    quoted = driver.execute_script("return [...document.querySelectorAll('#result blockquote p')]"
                                   ".map(p => p.textContent)")
    assert quoted and all(q in "\n".join((*PASTED, "Zoos protect endangered species from extinction.")) for q in quoted)
    assert any("<b>cages</b>" in q for q in quoted) or not any("cages" in q for q in quoted)
    fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert fetched and all(url.startswith(f"{server}/") for url in fetched)  # nothing from elsewhere
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / "map-view.png"))

    # a refusal is one line in the status area
    driver.find_element(By.ID, "texts").send_keys("\n---\n   \n")  # an empty text between separators is dropped
    driver.find_element(By.ID, "claim").clear()
    driver.find_element(By.ID, "claim").send_keys("1234 5678")
    driver.find_element(By.ID, "go").click()
    refused = _wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#status.error"))
    assert refused.text == "claim: the claim has no words in it"
    # markup in the claim is text too
    driver.find_element(By.ID, "claim").clear()
    driver.find_element(By.ID, "claim").send_keys("Zoos should be <b>banned</b>")
    driver.find_element(By.ID, "go").click()
    heading = "Perspectives on “Zoos should be <b>banned</b>”"
    _wait(driver, lambda d: d.find_element(By.ID, "result-claim").text == heading)
    assert not driver.find_elements(By.CSS_SELECTOR, "#result b")
