"""The documentation site works opened from disk (file://) and offline, in a real browser.

The site is built with mkdocs (``mkdocs build --strict``, as ``make docs`` does) into a
temporary folder and opened as ``file://…/index.html`` in headless Chromium (Debian's
``chromium`` package), driven through the Chrome DevTools protocol over a pipe (plain
Python, no driver). A person reading it would follow a menu link, search, and read code: the
test does the same and checks that a menu link opens the page (not a folder listing), that a
search lists results, that code blocks are highlighted by local CSS, and that no page asks
for anything outside the site (no CDN, no network).

Skipped when /usr/bin/chromium or the docs extra (mkdocs, mkdocstrings) is absent.
"""

from __future__ import annotations

import base64
import html.parser
import importlib.util
import json
import os
import pathlib
import re
import select
import shutil
import subprocess
import sys
import time
import urllib.parse

import pytest

# all of them build the site; the two that open it in Chromium are docs_browser tests too
pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM = pathlib.Path("/usr/bin/chromium")
# How long the browser may take to answer one command or to reach one state (seconds): a
# cold start of Chromium on a busy 2-core machine takes a few seconds.
PATIENCE = 60.0


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    """The site built from the working tree's docs into a temporary folder."""
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"the docs extra is not installed ({module} missing): pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stderr[-4000:]}"
    return out


class _Links(html.parser.HTMLParser):
    """The (tag, url) of every href and src attribute of one HTML page."""

    def __init__(self):
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.urls.append((tag, value))


def test_every_local_link_names_a_file(site):
    """From disk a link to a folder opens a bare listing: every link between pages and to
    assets must name a file that exists, and no page may load anything from the network."""
    # 404.html is the page a web server sends for any missing path, so its links are
    # absolute from the site's root; opened from disk it is never reached
    pages = sorted(set(site.rglob("*.html")) - {site / "404.html"})
    assert len(pages) > 5, pages
    checked = 0
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for tag, url in parser.urls:
            parts = urllib.parse.urlsplit(url)
            if parts.scheme or parts.netloc:
                # a page may link out (a paper, mkdocs' credit) but loads nothing from outside
                assert tag == "a", f"{page.relative_to(site)}: <{tag}> loads {url}"
                continue
            if not parts.path:  # an anchor on the same page
                continue
            target = (page.parent / urllib.parse.unquote(parts.path)).resolve()
            assert target.is_file(), f"{page.relative_to(site)} links to {url}, not a file"
            checked += 1
        # the theme's table of contents looks each heading up by its id with querySelector,
        # which refuses an id that starts with a digit (a script error on that page)
        ids = re.findall(r'<h[1-6] id="([^"]*)"', page.read_text(encoding="utf-8"))
        assert not [i for i in ids if i[:1].isdigit()], f"{page.relative_to(site)}: {ids}"
    assert checked > 100, checked


class DevTools:
    """Headless Chromium driven over the DevTools protocol through a pipe
    (``--remote-debugging-pipe``: JSON messages separated by NUL bytes, the browser reading
    on its fd 3 and writing on its fd 4)."""

    def __init__(self, user_data_dir: pathlib.Path, log: pathlib.Path):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 f"--user-data-dir={user_data_dir}", "--remote-debugging-pipe",
                 "--window-size=1280,900", "about:blank"]
        # bash moves the pipe ends to the descriptors 3 and 4 that Chromium reads (dash
        # takes one-digit descriptors only)
        script = (f'exec "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- '
                  f'{from_browser_w}>&-')
        self._log = open(log, "wb")
        self.process = subprocess.Popen(
            ["/bin/bash", "-c", script, "bash", str(CHROMIUM), *flags],
            pass_fds=(to_browser_r, from_browser_w), stdin=subprocess.DEVNULL,
            stdout=self._log, stderr=subprocess.STDOUT)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (AssertionError, OSError, TimeoutError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self._log.close()

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the browser did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise OSError("the browser closed its DevTools pipe (it exited)")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: str | None = None, timeout: float = PATIENCE,
             **params) -> dict:
        """Send one command and return its result (events read meanwhile are kept)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_browser, data):]
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next_id:
                assert "error" not in answer, f"{method}: {answer['error']}"
                return answer.get("result", {})
            self.events.append(answer)

    def wait_for_event(self, method: str, session: str, timeout: float = PATIENCE) -> dict:
        """The first not yet consumed event ``method`` of ``session`` (removed from the list)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def evaluate(self, session: str, expression: str):
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", session, expression=expression,
                           returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def wait_until(self, session: str, expression: str, timeout: float = PATIENCE):
        """Poll a JavaScript expression until it is truthy; its last value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(session, expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.1)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent (Debian: apt-get install chromium)")
    folder = tmp_path_factory.mktemp("chromium")
    devtools = DevTools(folder / "profile", folder / "chromium.log")
    try:
        yield devtools
    finally:
        devtools.close()
        shutil.rmtree(folder / "profile", ignore_errors=True)


def _open_tab(devtools: DevTools) -> str:
    """A new tab with the page, network, runtime and log domains on; its session id."""
    target = devtools.call("Target.createTarget", url="about:blank")["targetId"]
    session = devtools.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Page", "Network", "Runtime", "Log"):
        devtools.call(f"{domain}.enable", session)
    return session


def _load(devtools: DevTools, session: str, action) -> None:
    """Run ``action`` (a navigation or a click) and wait for the new page's load event."""
    devtools.events = [e for e in devtools.events if e.get("method") != "Page.loadEventFired"]
    action()
    devtools.wait_for_event("Page.loadEventFired", session)


def _problems(devtools: DevTools, session: str) -> list[str]:
    """What went wrong in the tab so far: a request that left the disk, a load that failed,
    a script error or a console error."""
    found = []
    for event in devtools.events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith(("file:", "data:", "about:")):
                found.append(f"request to {url}")
        elif method == "Network.loadingFailed":
            found.append(f"failed load: {params.get('errorText')} ({params.get('type')})")
        elif method == "Runtime.exceptionThrown":
            found.append(f"script error: {params['exceptionDetails'].get('text')} "
                         f"{params['exceptionDetails'].get('exception', {}).get('description')}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"console: {params['entry']['text']}")
        elif method == "Runtime.consoleAPICalled" and params["type"] == "error":
            found.append(f"console.error: {[a.get('value') for a in params['args']]}")
    return found


def _page(devtools: DevTools, session: str) -> dict:
    """The tab's address, title and first heading."""
    return devtools.evaluate(session, "({url: location.href, title: document.title, "
                                      "h1: document.querySelector('h1') && "
                                      "document.querySelector('h1').textContent})")


def _screenshot(devtools: DevTools, session: str, path: pathlib.Path) -> None:
    data = devtools.call("Page.captureScreenshot", session, format="png")["data"]
    path.write_bytes(base64.b64decode(data))


@pytest.mark.docs_browser
def test_site_from_disk_in_chromium(site, browser, tmp_path):
    session = _open_tab(browser)
    index = (site / "index.html").as_uri()
    _load(browser, session, lambda: browser.call("Page.navigate", session, url=index))
    assert browser.evaluate(session, "document.querySelector('h1').textContent") == "sparselab"

    # 1. a menu link, clicked, opens its page (a folder link would open a bare listing)
    menu = "document.querySelector('ul.navbar-nav a.nav-link[href=\"first_experiment.html\"]')"
    assert browser.evaluate(session, f"{menu} !== null"), "no menu link to first_experiment.html"
    _load(browser, session, lambda: browser.evaluate(session, f"{menu}.click()"))
    page = _page(browser, session)
    assert page["url"] == (site / "first_experiment.html").as_uri(), page
    assert page["h1"] == "Your first experiment", page
    assert not page["title"].startswith("Index of"), page

    # 2. code blocks are highlighted, with the colours of the site's own CSS (Pygments'
    # keyword green), not plain text waiting for a script from a CDN
    spans = browser.evaluate(
        session, "Array.from(document.querySelectorAll('div.highlight pre span.kn, "
                 "div.highlight pre span.k')).map(s => [s.textContent, "
                 "getComputedStyle(s).color])")
    assert spans, "no highlighted keyword in the page's code blocks"
    assert ["import", "rgb(0, 128, 0)"] in spans, spans[:10]
    browser.evaluate(session, "document.querySelectorAll('div.highlight')[1].scrollIntoView()")
    _screenshot(browser, session, tmp_path / "first_experiment.png")

    # the API reference's pages sit in a drop-down menu: open it, click one
    browser.evaluate(session, "document.querySelector('a.dropdown-toggle').click()")
    item = "document.querySelector('a.dropdown-item[href=\"api/routing.html\"]')"
    assert browser.wait_until(session, f"{item}.offsetParent !== null"), "the menu did not open"
    _load(browser, session, lambda: browser.evaluate(session, f"{item}.click()"))
    page = _page(browser, session)
    assert page["url"] == (site / "api" / "routing.html").as_uri(), page
    assert page["h1"] == "routing", page
    # the signatures are highlighted too (mkdocstrings, through the same CSS)
    assert browser.evaluate(
        session, "document.querySelectorAll('.doc-signature span.n, .doc-signature span.nf')"
                 ".length") > 10

    # 3. a search, typed into the search box, lists the pages that hold the word
    browser.evaluate(session, "document.querySelector('a[data-bs-target=\"#mkdocs_search_modal\"]')"
                              ".click()")
    assert browser.wait_until(
        session, "document.activeElement && document.activeElement.id === 'mkdocs-search-query'"), \
        "the search box did not open or take the focus"
    for char in "CustomTarget":
        browser.call("Input.dispatchKeyEvent", session, type="keyDown", text=char, key=char)
        browser.call("Input.dispatchKeyEvent", session, type="keyUp", key=char)
    hits = browser.wait_until(
        session, "Array.from(document.querySelectorAll('#mkdocs-search-results article a'))"
                 ".map(a => a.getAttribute('href'))")
    assert hits, ("no search results; the results box says: "
                  + str(browser.evaluate(session, "document.getElementById("
                                                  "'mkdocs-search-results').textContent")))
    assert any("api/lipschitz.html" in hit for hit in hits), hits
    _screenshot(browser, session, tmp_path / "search.png")
    # a result opens its page (a file of the site, at the anchor)
    first = next(hit for hit in hits if "api/lipschitz.html" in hit)
    _load(browser, session, lambda: browser.evaluate(
        session, f"document.querySelector('#mkdocs-search-results a[href=\"{first}\"]').click()"))
    assert browser.evaluate(session, "location.pathname").endswith("/api/lipschitz.html")
    assert browser.evaluate(session, "document.querySelector('h1').textContent") == "lipschitz"

    # 4. nothing asked for the network, nothing failed to load, no script error
    assert _problems(browser, session) == []
    if os.environ.get("SPARSELAB_DOCS_SCREENSHOTS"):  # for a person to look at the pages
        for png in tmp_path.glob("*.png"):
            shutil.copy(png, pathlib.Path(os.environ["SPARSELAB_DOCS_SCREENSHOTS"]) / png.name)


@pytest.mark.docs_browser
def test_search_finds_nothing_for_an_absent_word(site, browser):
    """The search answers "no results" for a word in no page: results are not merely listed
    whatever is typed (the check above could not fail otherwise)."""
    session = _open_tab(browser)
    url = (site / "index.html").as_uri() + "?q=zyxwvutsrq"
    _load(browser, session, lambda: browser.call("Page.navigate", session, url=url))
    text = browser.wait_until(
        session, "document.getElementById('mkdocs-search-results').textContent")
    assert text == "No results found", text
    assert browser.evaluate(
        session, "document.querySelectorAll('#mkdocs-search-results article').length") == 0
    assert _problems(browser, session) == []
