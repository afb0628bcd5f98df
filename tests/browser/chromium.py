"""A headless Chromium for tests: Debian's ``chromium`` driven through its own
``chromedriver`` by selenium, both named by path so nothing is ever downloaded
(selenium's driver manager would try to fetch a matching driver otherwise)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/lib/chromium/chromium")
CHROMEDRIVER_PATHS = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
INSTALL = "apt-get install chromium chromium-driver (Debian's packages; .ci/run does it as root)"


def _first(paths: tuple[str, ...], name: str) -> str | None:
    for path in paths:
        if os.access(path, os.X_OK):
            return path
    return shutil.which(name)


def browser_paths() -> tuple[str, str]:
    """Chromium's and chromedriver's paths; the test is skipped, saying how to install
    them, on a machine without them."""
    browser = _first(CHROMIUM_PATHS, "chromium")
    driver = _first(CHROMEDRIVER_PATHS, "chromedriver")
    if browser is None or driver is None:
        pytest.skip(f"no Chromium here: {INSTALL}")
    return browser, driver


@contextmanager
def headless_chromium(width: int = 1280, height: int = 900) -> Iterator[webdriver.Chrome]:
    browser, driver = browser_paths()
    options = Options()
    options.binary_location = browser
    for argument in (
        "--headless=new",
        # Tests run as root in containers, where Chromium's sandbox cannot start.
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--disable-extensions",
        "--no-first-run",
        "--hide-scrollbars",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    chrome = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    try:
        chrome.set_page_load_timeout(10)
        yield chrome
    finally:
        chrome.quit()
