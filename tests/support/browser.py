"""A real headless browser for the console's tests: Debian's Chromium driven through its
chromedriver by selenium, both given by path, so that nothing is downloaded at run time
(selenium-manager never runs). What the page logged and every request it made are read
back from Chromium's own logs."""

import json
import os
import pathlib
import shutil
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Where screenshots go: the tests' temporary directory unless this names another
# (`make screenshots` names docs/).
SCREENSHOTS = "JOBARCHIVE_SCREENSHOTS"


def chromium() -> Iterator[WebDriver]:
    """A headless Chromium, closed at the end; the test fails (not skips) without one."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if shutil.which(path) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: as root, run tests/install-chromium.sh "
            "(apt-get install chromium chromium-driver)"
        )
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-sync",
        "--lang=en-US",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def errors_logged(driver: WebDriver) -> list[str]:
    """What the pages logged at SEVERE: JavaScript errors, failed loads, CSP violations."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def requested_urls(driver: WebDriver) -> list[str]:
    """Every URL the pages asked for since the last call, from the performance log."""
    found = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            found.append(message["params"]["request"]["url"])
    return found


def hosts_other_than(urls: list[str], origin: str) -> list[str]:
    """The URLs not on ``origin`` (scheme://host:port)."""
    return [url for url in urls if not url.startswith(origin + "/") and url != origin]


def references(driver: WebDriver) -> list[str]:
    """Every src, href and action of the page as written: each must be a path on the
    server, never another host."""
    script = (
        "return Array.from(document.querySelectorAll('[src],[href],[action]'))"
        ".map(e => e.getAttribute('src') || e.getAttribute('href') || e.getAttribute('action'))"
    )
    found: list[str] = driver.execute_script(script)
    return found


def is_on_server(reference: str) -> bool:
    """A path or query on the same server: no scheme, no host."""
    parsed = urllib.parse.urlsplit(reference)
    return not parsed.scheme and not parsed.netloc and not reference.startswith("//")


# The widths the console is checked at: a desktop's, and a phone's.
WIDE = 1400
NARROW = 420


def screenshot(
    driver: WebDriver, directory: pathlib.Path, name: str, width: int = WIDE
) -> pathlib.Path:
    """The whole page, ``width`` wide, as a PNG named ``console-<name>.png`` in the
    screenshots' place."""
    target = pathlib.Path(os.environ.get(SCREENSHOTS) or directory)
    target.mkdir(parents=True, exist_ok=True)
    driver.set_window_size(width, 1000)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(max(int(height) + 40, 600), 3000))
    path = target / f"console-{name}.png"
    driver.save_screenshot(str(path))
    driver.set_window_size(WIDE, 1000)
    return path


def laid_out(driver: WebDriver, width: int) -> tuple[int, int]:
    """The page's width as laid out in a window ``width`` wide, and the viewport's: the
    first passes the second when something overflows sideways (a table not scrolling
    in its own box)."""
    driver.set_window_size(width, 1000)
    try:
        script = "return [document.documentElement.scrollWidth, window.innerWidth]"
        wide, viewport = driver.execute_script(script)
        return int(wide), int(viewport)
    finally:
        driver.set_window_size(WIDE, 1000)


def texts(driver: WebDriver, selector: str) -> list[str]:
    """The text of every element the CSS selector finds (SVG text included)."""
    return [
        element.get_attribute("textContent") or ""
        for element in driver.find_elements(By.CSS_SELECTOR, selector)
    ]


def attribute(driver: WebDriver, selector: str, name: str) -> list[Any]:
    """An attribute of every element the CSS selector finds."""
    return [
        element.get_attribute(name) for element in driver.find_elements(By.CSS_SELECTOR, selector)
    ]


# Seconds a click's page has to replace the one it was made on (a loaded machine's).
NAVIGATION = 60


def follow(driver: WebDriver, by: str, value: str) -> None:
    """Click the element and wait until its page is replaced by the one it leads to: a
    click returns before the browser has navigated, and on a busy machine the old page
    is still there when the test looks."""
    page = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(by, value).click()
    WebDriverWait(driver, NAVIGATION).until(expected_conditions.staleness_of(page))
