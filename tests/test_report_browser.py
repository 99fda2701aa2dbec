"""The report as a browser shows it: headless Chromium (Debian's ``chromium``) loads ``index.html`` from
disk at 1400 and 800 px, and a script on the page reports what it sees. Skipped where no Chromium is
installed (``apt-get install chromium``)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import pytest
from helpers import SAMPLE, invoke

BROWSER = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)

pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium: apt-get install chromium to run it")

# runs in the page after load: every gallery matrix opened as a reader would, then the checks
PROBE = """<script>
window.addEventListener("load", () => {
  for (const d of document.querySelectorAll("details")) d.open = true;
  const imgs = [...document.images], W = document.documentElement.clientWidth;
  const r = {
    images: imgs.length,
    broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute("src")),
    width: W, scroll: document.documentElement.scrollWidth,
    outside: [...document.body.querySelectorAll("*")]
      .filter(e => !e.closest(".wrap") && e.getBoundingClientRect().right > W + 1)
      .map(e => e.tagName + (e.className ? "." + e.className : "")),
  };
  const t = document.querySelector("table.t"), th = t.tHead.rows[0].cells[2];
  const aers = () => [...t.tBodies[0].rows].map(row => parseFloat(row.cells[2].textContent));
  r.header = th.textContent;
  r.loaded = aers();
  th.click();
  r.first = aers();
  th.click();
  r.second = aers();
  const hm = [...document.querySelectorAll("table.hm")];
  r.legends = hm.map(h => h.caption ? h.caption.textContent : "");
  // a vertical column header whose words overflow its cell, or start above the table, is clipped
  r.clipped = hm.flatMap(h => [...h.querySelectorAll("th.s")].filter(c =>
    c.scrollHeight > c.clientHeight + 1 || c.getBoundingClientRect().top < h.getBoundingClientRect().top - 1)
    .map(c => c.textContent));
  const figs = [...document.querySelectorAll("figure.g")];
  r.figureTops = figs.map(f => Math.round(f.getBoundingClientRect().top));
  r.captions = figs.map(f => f.querySelector("figcaption").textContent);
  const td = document.querySelector("table.hm td[title]");
  r.tip = td ? td.title : null;
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(r);
  document.body.appendChild(out);
});
</script></body>"""


def look(page, width: int) -> dict:
    proc = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},1000",
         "--hide-scrollbars", "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.fixture(scope="module")
def probed_page(models, tmp_path_factory):
    out = tmp_path_factory.mktemp("browser") / "rep"
    r = invoke("report", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               "--gold", SAMPLE / "test.gold.pharaoh", "-o", out, "--gallery", "2")
    assert r.exit_code == 0, r.stderr
    page = out / "probe.html"  # the report as written, plus the probe
    page.write_text((out / "index.html").read_text().replace("</body>", PROBE))
    return page


@pytest.mark.parametrize("width", [1400, 800])
def test_report_in_a_browser(probed_page, width):
    seen = look(probed_page, width)
    assert seen["width"] <= width
    # every image loads: the summary's plots and the 2 best + 2 worst gallery sentences
    assert seen["images"] >= 6 and seen["broken"] == []
    # nothing wider than the window: wide tables scroll inside their own box
    assert seen["scroll"] <= seen["width"] and seen["outside"] == [], seen["outside"][:10]
    # the score table comes sorted by AER: the first click on its header reverses it, the second sorts
    # it back
    assert seen["header"] == "AER" and len(set(seen["loaded"])) > 1
    assert seen["loaded"] == sorted(seen["loaded"])
    assert seen["first"] == sorted(seen["loaded"], reverse=True) and seen["second"] == seen["loaded"]
    # every HTML matrix has its legend and shows its column headers whole
    assert seen["legends"] and all("gold" in x for x in seen["legends"]), seen["legends"]
    assert seen["clipped"] == []
    # each gallery figure is captioned with the command that draws it; the worst sentence comes first
    assert all("attnalign plot sentence" in c and "--index" in c for c in seen["captions"])
    aer = [float(re.search(r"AER ([\d.]+)", c).group(1)) for c in seen["captions"]]
    assert aer[0] == max(aer), aer
    if width >= 1400:  # figures as wide as their pictures: more than one to a row
        assert len(set(seen["figureTops"])) < len(seen["figureTops"]), seen["figureTops"]
    # hovering a matrix cell names its words and weight
    assert re.fullmatch(r"\S+ → \S+: [01]\.\d{3}(; .+)?", seen["tip"])
