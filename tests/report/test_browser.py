"""Every command's HTML report, opened in a real headless browser (Debian's Chromium through
Selenium and ChromeDriver): it loads with no console error, every picture has a non-zero size, and
the culprit's name is visible text in the status line.

Skipped with the reason where no browser is installed (`.ci/run` installs one where the machine
allows: apt-get install chromium chromium-driver; pip install -e '.[browser]').
BISECTK_SCREENSHOTS=DIR saves one PNG per picture kind there (the README's pictures:
`BISECTK_SCREENSHOTS=docs/img python -m pytest tests/report/test_browser.py`).
"""
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, bisectk

webdriver = pytest.importorskip("selenium.webdriver", reason="no browser driver: pip install -e '.[browser]'")

CHROMIUM = os.environ.get("BISECTK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = os.environ.get("BISECTK_CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
if not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()):
    pytest.skip(f"no browser: {CHROMIUM} or {CHROMEDRIVER} is missing (apt-get install chromium chromium-driver)",
                allow_module_level=True)

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "diffsrc"))
from gitrepo import make_repo  # noqa: E402
from kernelpair import make_pair  # noqa: E402

from tests.report.test_html import interaction_spec  # noqa: E402

# which page's picture stands for each kind in the README
SHOT_FROM = {"run-matrix": "ablate", "interaction": "ablate", "slow-metric": "slow", "hunks": "diff",
             "commit-line": "bisect", "posterior": "bisect", "progress": "hang"}
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1100,1600"]


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    profile = tempfile.mkdtemp(prefix="bisectk-chromium-")
    options = Options()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def run(*args, cwd=None, code=(0,)):
    p = bisectk(*args, cwd=cwd, timeout=600)
    assert p.returncode in code, (args[0], p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    return p


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Each command's HTML report, made by running it as a user would: {page: (path, culprit)}."""
    tmp = tmp_path_factory.mktemp("pages")
    out = {}

    def culprit_of(js):
        return json.loads(js.read_text())

    # ablate: two factors that fail only together
    spec = interaction_spec(tmp / "warps")
    run("ablate", spec, "--ledger", tmp / "a.db", "--html", tmp / "ablate.html", "--json-out", tmp / "a.json")
    out["ablate"] = (tmp / "ablate.html", ", ".join(culprit_of(tmp / "a.json")["culprits"]), 2)
    run("report", tmp / "a.db", "--html", tmp / "report.html")
    out["report"] = (tmp / "report.html", ", ".join(culprit_of(tmp / "a.json")["culprits"]), 2)
    # ablate: a correct but slow configuration (variants/cpu/pipeline-slow.toml). Its verdicts are
    # wall-time ratios, 1.8x against a 1.4x threshold, of 3 ms sleeps per tile: under -n 3 on 2
    # cores a wake-up late by a millisecond or two made a passing run SLOW and left the search
    # unconfirmed (exit 1), twice in a day. Here with 8 ms per tile and fewer tiles, and three
    # endpoint runs each (the SLOW baseline a median), as a user of a timing oracle on a busy
    # machine would set it up. It failed once more so (exit 1, a fresh-clone run of stop 42): now
    # 16 ms per tile, and an exit 1 is taken when the culprit is still named -- this test is about
    # the page; the search under a timing oracle is tested in tests/e2e
    variant = (ROOT / "variants" / "cpu" / "pipeline-slow.toml").read_text()
    slow = (variant.replace('"3000"', '"16000"').replace("tiles = 24", "tiles = 10").replace("tiles = 32", "tiles = 12")
            .replace('"kernels/cpu/pipeline.py"', json.dumps(str(ROOT / "kernels" / "cpu" / "pipeline.py"))))
    assert slow.count('"16000"') == 2 and "tiles = 12" in slow and str(ROOT) in slow
    (tmp / "slow.toml").write_text(slow)
    run("ablate", tmp / "slow.toml", "--repeat", "3", "--ledger", tmp / "s.db",
        "--html", tmp / "slow.html", "--json-out", tmp / "s.json", code=(0, 1))
    assert culprit_of(tmp / "s.json")["culprits"] == ["depth"]
    out["slow"] = (tmp / "slow.html", ", ".join(culprit_of(tmp / "s.json")["culprits"]), 3)
    # diff: two hunks that fail only together, among build breakers
    pair = make_pair(tmp / "src", hunks=20, culprit="pair", breakers=1, seed=3)
    (tmp / "kp.toml").write_text('name = "kernelpair"\n[subject]\ncommand = ["python", "run.py"]\n'
                                 'build = ["python", "-m", "compileall", "-q", "kernel"]\n[oracle]\nmetric = "err"\nmax = 0\n')
    (tmp / "cache").mkdir(exist_ok=True)    # a --ledger's directory is not made (engine/session.py)
    run("diff", pair.good, pair.bad, tmp / "kp.toml", "--ledger", tmp / "cache" / "d.db", "--html", tmp / "diff.html",
        "--json-out", tmp / "d.json", cwd=tmp)
    first_hunk = culprit_of(tmp / "d.json")["culprit_hunks"][0]
    out["diff"] = (tmp / "diff.html", first_hunk["file"], 1)
    # bisect, flake-aware: the first bad commit hangs half of the time
    shas = make_repo(tmp / "flaky", n=16, culprit=9, broken=(), flaky=0.5)
    run("bisect", "--repo", tmp / "flaky", "--good", shas[0], "--bad", shas[-1], "--run", "python kernel.py",
        "--timeout", "1", "--flaky", "--repeat", "4", "--html", tmp / "bisect.html", "--json-out", tmp / "b.json",
        code=(0, 1))
    fb = culprit_of(tmp / "b.json")["first_bad"] or {"sha": "?"}
    out["bisect"] = (tmp / "bisect.html", fb["sha"][:10], 2)
    (tmp / "flaky.log").write_text(run("log", "--repo", tmp / "flaky").stdout)
    run("replay", tmp / "flaky.log", "--html", tmp / "replay.html", code=(0, 1))
    out["replay"] = (tmp / "replay.html", fb["sha"][:10], 2)
    # triage: commit, then hunk
    shas = make_repo(tmp / "repo", n=12, culprit=6, broken=(3,))
    run("triage", "--repo", tmp / "repo", "--good", shas[0], "--bad", shas[-1], "--run", "python kernel.py",
        "--build", "python build.py", "--html", tmp / "triage.html", "--json-out", tmp / "t.json", code=(1,))
    out["triage"] = (tmp / "triage.html", culprit_of(tmp / "t.json")["first_bad"]["sha"][:10], 2)
    # a hang: the watchdog records both runs' progress (BISECTK_PHASE lines of kernels/cpu/pipeline.py)
    run("ablate", ROOT / "variants" / "cpu" / "pipeline-hang.toml", "--ledger", tmp / "h.db", "--html",
        tmp / "hang.html", "--json-out", tmp / "h.json")
    out["hang"] = (tmp / "hang.html", ", ".join(culprit_of(tmp / "h.json")["culprits"]), 3)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("page", ["ablate", "report", "slow", "diff", "bisect", "replay", "triage", "hang"])
def test_report_opens_in_a_browser(browser, pages, page):
    path, culprit, n_pictures = pages[page]
    assert culprit and culprit != "?", f"{page}: the command found no culprit to look for"
    browser.get(path.resolve().as_uri())
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    figures = browser.find_elements("css selector", "figure")
    assert len(figures) == n_pictures, [f.get_attribute("id") for f in figures]
    for fig in figures:
        svg = fig.find_element("css selector", "svg")
        assert svg.size["width"] > 0 and svg.size["height"] > 0, fig.get_attribute("id")
    status = browser.find_element("id", "status")
    assert status.is_displayed() and culprit in status.text, (culprit, status.text)
    shots = os.environ.get("BISECTK_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        for fig in figures:
            kind = fig.get_attribute("id").removeprefix("fig-")
            if SHOT_FROM.get(kind) == page:
                browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", fig)
                fig.screenshot(str(Path(shots) / f"{kind}.png"))
