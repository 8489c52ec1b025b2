"""The console in a real headless browser (Debian's Chromium through selenium), served by
a real ``jobarchive serve`` from databases filled through the real write path: the
demo's jobs recorded by the real operator from an emulated cluster, and a job
of 600 pods recorded by the recorder, at ``/`` and under the aggregated API's prefix,
where ``kubectl proxy`` opens it. Each page loads without a JavaScript error or a
request to any host but the server; a screenshot of each is kept
(``JOBARCHIVE_SCREENSHOTS``, or the test's directory; ``make screenshots`` refreshes
docs/)."""

import asyncio
import datetime
import pathlib
import urllib.parse
from collections.abc import Iterator

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from demo.stories import RECORDED
from jobarchive.config import DbTls
from jobarchive.core.rows import FailureRow
from jobarchive.reading import queries
from jobarchive.reading.console import mounts
from jobarchive.recording.convert import workloads as wl
from jobarchive.storage import database as db
from jobarchive.storage.failed import FailedJob
from jobarchive.storage.kueue import Attempt
from jobarchive.storage.models import Job
from jobarchive.storage.readpool import ReadPool
from jobarchive.storage.store import Store
from testbed import objects as o
from testbed.cluster import Cluster
from testbed.operator import OperatorProcess
from tests.support import browser
from tests.support.console import demo_recorded, large_job, serving_console
from tests.support.history import History
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e


@pytest.fixture
def driver() -> Iterator[WebDriver]:
    yield from browser.chromium()


def clean(driver: WebDriver, origin: str) -> None:
    """Nothing went wrong in the pages since the last check, and nothing left the server."""
    assert browser.errors_logged(driver) == []
    assert browser.hosts_other_than(browser.requested_urls(driver), origin) == []
    assert [ref for ref in browser.references(driver) if not browser.is_on_server(ref)] == []


def narrow(driver: WebDriver, shots: pathlib.Path, name: str) -> None:
    """The page at a phone's width: nothing overflows it sideways (wide tables scroll in
    their own box), and its screenshot is kept."""
    wide, viewport = browser.laid_out(driver, browser.NARROW)
    assert viewport <= browser.NARROW and wide <= viewport, (name, wide, viewport)
    browser.screenshot(driver, shots, f"{name}-narrow", browser.NARROW)


def tour_of_the_demo(
    driver: WebDriver, origin: str, shots: pathlib.Path, classes: set[str]
) -> None:
    driver.get(origin + "/")
    assert driver.title == "Jobs · jobarchive"
    rows = browser.texts(driver, "tr.job")
    assert len(rows) == len(RECORDED)
    assert any("nlp/bert-finetune" in row and "Failed" in row for row in rows)
    # The failure's reason and the GPU-hours as usage counts them, in the list.
    assert "OOMKilled" in " ".join(browser.texts(driver, "tr.job td.reason"))
    assert browser.texts(driver, "tr.job td.gpu-hours")
    local = browser.attribute(driver, "tr.job time", "title")
    assert local and all(title.endswith("(local time)") for title in local)  # the script ran
    browser.screenshot(driver, shots, "jobs")
    narrow(driver, shots, "jobs")
    clean(driver, origin)

    # A filter typed into the form lands in the URL, and the URL alone gives it back.
    driver.find_element(By.NAME, "namespace").send_keys("research")
    browser.follow(driver, By.CSS_SELECTOR, "form.filters button")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(driver.current_url).query)
    assert query == {"namespace": ["research"]}
    # mnist-ddp, vit-pretrain, resnet-sweep-3.
    assert len(browser.texts(driver, "tr.job")) == 3
    driver.get(driver.current_url)
    assert driver.find_element(By.NAME, "namespace").get_attribute("value") == "research"
    assert len(browser.texts(driver, "tr.job")) == 3

    # Keyset paging through the URL: page 1, its next link, and back by the URL.
    driver.get(origin + "/?limit=4")
    first = browser.texts(driver, "tr.job")
    browser.follow(driver, By.CSS_SELECTOR, "a.next")
    assert "cursor=" in driver.current_url and "limit=4" in driver.current_url
    second = browser.texts(driver, "tr.job")
    assert len(first) == 4 and len(second) == 2 and set(first).isdisjoint(second)
    assert driver.find_elements(By.CSS_SELECTOR, "a.next") == []
    driver.get(driver.current_url)
    assert browser.texts(driver, "tr.job") == second
    clean(driver, origin)

    # The failed job: every pod's bar, the failure reason on its bar, the Warnings.
    driver.get(origin + "/?name=bert")
    browser.follow(driver, By.LINK_TEXT, "nlp/bert-finetune")
    assert driver.current_url.startswith(origin + "/job?uid=")
    bars = driver.find_elements(By.CSS_SELECTOR, "svg.timeline g.bar")
    assert len(bars) == 2 and all(bar.is_displayed() for bar in bars)
    assert browser.attribute(driver, "svg.timeline g.bar", "data-pods") == ["1", "1"]
    assert "OOMKilled (exit code 137)" in browser.texts(driver, "svg.timeline text.reason")
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.timeline g.mark.warning")) == 2
    warnings = browser.texts(driver, "tr.event.warning")
    assert any("OOMKilling" in row for row in warnings)
    assert any("TFJobFailed" in row for row in warnings)
    [uid] = urllib.parse.parse_qs(urllib.parse.urlsplit(driver.current_url).query)["uid"]
    assert f"jobarchive job {uid}" in driver.find_element(By.CSS_SELECTOR, "p.cli").text
    assert driver.find_element(By.CSS_SELECTOR, "dd.queue-wait").text != ""
    browser.screenshot(driver, shots, "job")
    narrow(driver, shots, "job")
    clean(driver, origin)

    # The worker the kubelet restarted once: one bar, marked where it restarted.
    driver.get(origin + "/?name=llama-sft")
    browser.follow(driver, By.LINK_TEXT, "nlp/llama-sft")
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.timeline path.restart")) == 1
    assert sorted(browser.texts(driver, "tr.pod td.restarts")) == ["0", "1"]
    clean(driver, origin)

    browser.follow(driver, By.LINK_TEXT, "Statistics")
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.days rect.segment")) >= 2
    assert "OOMKilled" in browser.texts(driver, "svg.bars text.label")
    assert " jobs in all." in driver.find_element(By.CSS_SELECTOR, "main > p.note").text
    browser.screenshot(driver, shots, "stats")
    narrow(driver, shots, "stats")
    clean(driver, origin)
    # A day's column leads to the jobs it counts, created that day with that status.
    segment = driver.find_element(By.CSS_SELECTOR, "svg.days a rect.segment")
    counted = segment.find_element(By.TAG_NAME, "title").get_attribute("textContent") or ""
    page = driver.find_element(By.TAG_NAME, "html")
    segment.click()
    WebDriverWait(driver, browser.NAVIGATION).until(expected_conditions.staleness_of(page))
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(driver.current_url).query)
    assert set(query) == {"status", "created_since", "created_until"}
    assert counted.endswith(query["status"][0])
    assert browser.texts(driver, "tr.job")
    clean(driver, origin)

    browser.follow(driver, By.LINK_TEXT, "Usage")
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg rect")) >= 2
    # The failed jobs' classes ranked by their GPU-hours, each a bar.
    labels = browser.texts(driver, "#failure-classes + svg.bars text.label")
    assert classes <= set(labels), (classes, labels)
    assert browser.texts(driver, "table.usage tr.usage-row")
    csv_link = driver.find_element(By.CSS_SELECTOR, "a.csv").get_attribute("href") or ""
    assert urllib.parse.urlsplit(csv_link).path == "/usage.csv"
    browser.screenshot(driver, shots, "usage")
    narrow(driver, shots, "usage")
    clean(driver, origin)
    # By cluster queue, the GPU-hours preemptions cost each (none in the demo: said so).
    browser.follow(driver, By.CSS_SELECTOR, "#preempted + p.note a")
    assert "by=clusterqueue" in driver.current_url
    preempted = driver.find_element(By.CSS_SELECTOR, "#preempted + p.empty").text
    assert preempted.startswith("No Kueue preemption ended")
    narrow(driver, shots, "usage-by-clusterqueue")
    clean(driver, origin)

    driver.get(origin + "/?created_since=last+week")
    assert "is not a date or time" in driver.find_element(By.CSS_SELECTOR, ".problem").text
    # The one error logged is the page's own status.
    assert all("status of 400" in entry for entry in browser.errors_logged(driver))


async def test_the_demos_jobs_in_a_browser(
    operator: OperatorProcess,
    cluster: Cluster,
    archive: str,
    e2e_db_url: str,
    tmp_path: pathlib.Path,
    driver: WebDriver,
) -> None:
    await demo_recorded(cluster)
    failed = {name for name, status in RECORDED.items() if status == "Failed"}

    async def classified() -> set[str] | None:
        """The failed jobs' classes, once the classifying pass filed each of them."""
        jobs = await Job.filter(name__in=failed).values_list("job_id", flat=True)
        found = await FailedJob.filter(job_id__in=jobs).values_list("failure_class", flat=True)
        return {str(name) for name in found} if len(found) == len(failed) else None

    classes = await eventually(classified, within=60)
    async with serving_console(e2e_db_url, tmp_path) as origin:
        await asyncio.to_thread(tour_of_the_demo, driver, origin, tmp_path, classes)


def large_job_page(driver: WebDriver, origin: str, uid: str, shots: pathlib.Path) -> None:
    driver.get(f"{origin}/job?uid={uid}")
    pods = [int(n) for n in browser.attribute(driver, "svg.timeline g.bar", "data-pods")]
    assert sum(pods) == 600 and len(pods) <= 40
    assert "OOMKilled (exit code 137)" in browser.texts(driver, "svg.timeline text.reason")
    assert len(browser.texts(driver, "tr.pod")) == queries.DEFAULT_PAGE
    # Why it failed first; Kueue's two attempts as bands, the preemption marked.
    [why] = browser.texts(driver, "p.why")
    assert why.startswith("Why: GPUOutOfMemory (pod large-worker-0, container pytorch, exit")
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.timeline g.attempt")) == 2
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.timeline g.attempt.preempted")) == 1
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.timeline g.preemption")) == 1
    assert "Kueue attempt (quota reserved to its end)" in browser.texts(driver, "p.legend")[0]
    assert len(browser.texts(driver, "tr.attempt")) == 2
    narrow(driver, shots, "large-job")
    browser.follow(driver, By.CSS_SELECTOR, "a.next-pods")
    assert "pods_cursor=" in driver.current_url
    assert len(browser.texts(driver, "tr.pod")) == queries.DEFAULT_PAGE
    browser.screenshot(driver, shots, "large-job")
    clean(driver, origin)


async def admitted_then_failed(uid: str) -> None:
    """Kueue's two attempts of the job, the first preempted, then its failure, classed."""
    now = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)
    for state in ("preempted", "finished"):
        attempt = wl.observe(o.fixture(f"kueue/{state}.yaml"), now).attempt
        assert attempt is not None
        await Store().upsert(Attempt, [{**attempt, "job_id": uid}])
    await Job.filter(job_id=uid).update(status="Failed")
    failure: FailureRow = {
        "job_id": uid,
        "version": "1",
        "namespace": "team-a",
        "failure_class": "GPUOutOfMemory",
        "pod_id": "pod-1",
        "pod_name": "large-worker-0",
        "container": "pytorch",
        "exit_code": 1,
        "signal": None,
        "detail": "torch.OutOfMemoryError: CUDA out of memory",
        "derived_exit_code": 1,
        "gmt_created": now,
    }
    await Store().upsert(FailedJob, [failure])


async def large_job_archive(
    directory: pathlib.Path, pods: int, admitted: bool = False
) -> tuple[str, str]:
    """A SQLite archive of a job of ``pods`` pods, recorded by the recorder (then, when
    ``admitted``, preempted by Kueue once and failed): its URL and the job's uid."""
    url = f"sqlite://{directory / 'archive.sqlite3'}"
    await db.open_database(url, encryption=DbTls(), read_pool=ReadPool(url))
    try:
        async with History() as history:
            job = await large_job(history, pods)
        if admitted:
            await admitted_then_failed(job["metadata"]["uid"])
    finally:
        await db.close_database()
    return url, job["metadata"]["uid"]


async def test_a_job_of_hundreds_of_pods_in_a_browser(
    tmp_path: pathlib.Path, driver: WebDriver
) -> None:
    url, uid = await large_job_archive(tmp_path, 600, admitted=True)
    async with serving_console(url, tmp_path) as origin:
        await asyncio.to_thread(large_job_page, driver, origin, uid, tmp_path)


def under_the_prefix(driver: WebDriver, origin: str) -> None:
    """The console as kubectl proxy serves it: every page, asset and form under the
    prefix, the style and the script applied (the CSP let them in, nothing else)."""
    console = origin + mounts.PATH + "/"
    aggregated = origin + "/apis/archive.jobarchive.io/v1"

    def stays() -> None:
        here = driver.current_url
        assert here.startswith(console), here
        for reference in browser.references(driver):
            target = urllib.parse.urljoin(here, reference)
            assert target.startswith(aggregated), (here, reference)
            if target.startswith(console):
                assert "/" not in target.removeprefix(console).partition("?")[0], target
        clean(driver, origin)

    driver.get(console)
    assert driver.title == "Jobs · jobarchive"
    header = driver.find_element(By.CSS_SELECTOR, "header.top")
    assert header.value_of_css_property("background-color") == "rgba(31, 58, 95, 1)"
    local = browser.attribute(driver, "tr.job time", "title")
    assert local and all(title.endswith("(local time)") for title in local)
    stays()
    browser.follow(driver, By.LINK_TEXT, "team-a/llama-pretrain")
    assert driver.current_url.startswith(console + "job?uid=")
    assert driver.find_elements(By.CSS_SELECTOR, "svg.timeline g.bar")
    stays()
    browser.follow(driver, By.LINK_TEXT, "Statistics")
    assert driver.current_url == console + "stats"
    stays()
    browser.follow(driver, By.LINK_TEXT, "Jobs")
    driver.find_element(By.NAME, "namespace").send_keys("team-a")
    browser.follow(driver, By.CSS_SELECTOR, "form.filters button")
    assert driver.current_url.startswith(console + "?")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(driver.current_url).query)
    assert query == {"namespace": ["team-a"]}
    assert len(browser.texts(driver, "tr.job")) == 1
    stays()


async def test_the_console_under_the_aggregated_prefix_in_a_browser(
    tmp_path: pathlib.Path, driver: WebDriver
) -> None:
    url, _ = await large_job_archive(tmp_path, 60)
    async with serving_console(url, tmp_path) as origin:
        await asyncio.to_thread(under_the_prefix, driver, origin)
