"""The decisions page in a real headless browser: the daemon schedules the demo's cluster
(the emulator over real HTTP), Chromium loads /decisions, and what a person would see is
checked — the pending pod's reason, the pod's node-by-node table, and the replica
picture laid out with every box and pill visible.

``VOLSCHED_SCREENSHOTS=docs/images pytest tests/integration/test_decisions_browser.py``
also saves the pages as PNG files there (the README's picture); CI runs leave it unset.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from tests.browser.chromium import browser_paths, headless_chromium
from tests.integration.conftest import Cluster, eventually
from volsched.daemon.cli.demo_cluster import arrivals, cluster_objects

WAREHOUSE = "shop/warehouse-0"
WHY = "0/9 nodes are available: 9 node(s) did not have enough free storage."
# 3 postgres volumes of 3 replicas, 1 redis volume of 1.
REPLICAS = 10


def visible(element: WebElement) -> bool:
    size = element.size
    return element.is_displayed() and size["width"] > 0 and size["height"] > 0


def save_full_page(chrome: WebDriver, path: Path) -> None:
    """A screenshot of the whole page, not only the window's first screen."""
    height = chrome.execute_script("return document.documentElement.scrollHeight")
    chrome.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": int(height), "deviceScaleFactor": 1, "mobile": False},
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    chrome.save_screenshot(str(path))
    chrome.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})  # type: ignore[attr-defined]


def look_at_the_page(url: str, screenshots: Path | None) -> None:
    """Everything the browser does; blocking, so it runs in a thread beside the daemon."""
    with headless_chromium() as chrome:
        chrome.get(url)
        assert chrome.title == "volsched decisions"

        row = chrome.find_element(By.CSS_SELECTOR, f'tr.pending-pod[data-pod="{WAREHOUSE}"]')
        assert WHY in row.find_element(By.CSS_SELECTOR, "td.reason").text
        assert len(chrome.find_elements(By.CSS_SELECTOR, "tr.pending-pod")) == 1

        picture = chrome.find_element(By.CSS_SELECTOR, ".replica-map")
        assert visible(picture)
        zones = picture.find_elements(By.CSS_SELECTOR, ".zone")
        assert [zone.get_attribute("data-zone") for zone in zones] == ["zone-a", "zone-b", "zone-c"]
        nodes = picture.find_elements(By.CSS_SELECTOR, ".node")
        disks = picture.find_elements(By.CSS_SELECTOR, ".disk")
        pills = picture.find_elements(By.CSS_SELECTOR, ".replica")
        assert (len(nodes), len(disks), len(pills)) == (9, 18, REPLICAS)
        for element in [*zones, *nodes, *disks, *pills]:
            assert visible(element), element.get_attribute("outerHTML")[:120]
        # A pill sits inside its disk's box, which sits inside its node's box.
        for pill in pills:
            disk = pill.find_element(By.XPATH, "ancestor::div[contains(@class, 'disk')]")
            inner, outer = pill.rect, disk.rect
            assert (
                outer["x"] <= inner["x"]
                and inner["x"] + inner["width"] <= outer["x"] + outer["width"]
            )
        # Each postgres volume has its three replicas in three zones.
        postgres = [pill for pill in pills if pill.text == "data-postgres-0"]
        zones_of = {
            pill.find_element(By.XPATH, "ancestor::div[@data-zone]").get_attribute("data-zone")
            for pill in postgres
        }
        assert len(postgres) == 3 and len(zones_of) == 3
        if screenshots is not None:
            save_full_page(chrome, screenshots / "decisions.png")

        row.find_element(By.TAG_NAME, "a").click()
        now = chrome.find_element(By.CSS_SELECTOR, ".decided-now")
        assert WHY in now.text
        assert WHY in chrome.find_element(By.CSS_SELECTOR, ".last-attempt").text
        table = chrome.find_element(By.CSS_SELECTOR, "table.node-table")
        assert visible(table)
        rows = table.find_elements(By.CSS_SELECTOR, "tr.node-row")
        assert len(rows) == 9
        for node_row in rows:
            assert visible(node_row)
            assert node_row.find_element(By.CSS_SELECTOR, ".result").text == "rejected"
            assert "VolumeBinding: node(s) did not have enough free storage" in node_row.text
        if screenshots is not None:
            save_full_page(chrome, screenshots / "decisions-pod.png")


async def test_the_page_shows_pending_reasons_tables_and_replicas(cluster: Cluster) -> None:
    browser_paths()  # skips, saying how to install Chromium, where there is none
    started = time.monotonic()
    cluster.server.load(
        [obj for obj in cluster_objects() if obj["kind"] != "CustomResourceDefinition"]
    )
    cluster.server.load([obj for _, objects in arrivals() for obj in objects])
    daemon = await cluster.start_daemon()
    await eventually(
        lambda: (
            daemon.attempts.get(WAREHOUSE) is not None
            and len(daemon.cluster.storage.replicas) == REPLICAS
            and not daemon.cluster.assumed_pods
        ),
        what="every pod but the warehouse placed, its reason reported, replicas created",
    )
    shots = os.environ.get("VOLSCHED_SCREENSHOTS")
    url = f"http://127.0.0.1:{daemon.http_port}/decisions"
    await asyncio.to_thread(look_at_the_page, url, Path(shots) if shots else None)
    assert time.monotonic() - started < 20
