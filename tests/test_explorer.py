"""The attention explorer (`plot sentence --html`, a report's explorer.html): a self-contained page whose
data round-trips, whose user text stays text, that works from a saved attention file without torch, and
that a browser shows as promised: hovering a word highlights its row, the gold toggles off, the arrow keys
move between sentences, and nothing is logged as an error."""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from helpers import ROOT, SAMPLE, invoke

from attnalign.data.alignments import Alignment
from attnalign.data.corpus import read_corpus
from attnalign.eval.explorer import ExplorerSentence, explorer_html
from attnalign.eval.plot import Panel

BROWSER = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
TEST = ["--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr"]


def page_data(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    return json.loads(found.group(1))


def sentence(k: int, src, tgt, rng, views: int = 4) -> ExplorerSentence:
    gold = Alignment.from_links([(min(j, len(src) - 1), j) for j in range(len(tgt))])
    panels = [Panel(rng.dirichlet(np.ones(len(src)), len(tgt)), list(src), list(tgt),
                    [(min(j, len(src) - 1), j) for j in range(0, len(tgt), 2)], gold, title=f"view {v}")
              for v in range(views)]
    return ExplorerSentence(k, panels, gold)


def test_the_data_round_trips_and_user_text_stays_text():
    rng = np.random.default_rng(0)
    src, tgt = ["</script><b>bold</b>", "&amp;", "x"], ["<!--", "y"]
    page = explorer_html([sentence(3, src, tgt, rng)], title="<i>mine</i>")
    assert "<b>bold</b>" not in page and "<!--" not in page.split("<body>")[1] and "<i>mine</i>" not in page
    data = page_data(page)
    s = data["sentences"][0]
    assert (s["src"], s["tgt"], s["index"], data["title"]) == (src, tgt, 3, "<i>mine</i>")
    weights = np.frombuffer(base64.b64decode(s["views"][0]["m"]), np.uint8).reshape(len(tgt), len(src))
    again = sentence(3, src, tgt, np.random.default_rng(0)).views[0].matrix
    assert np.abs(weights / 255 - again).max() <= 1 / 510  # a byte a weight
    assert s["views"][0]["links"] == [[0, 0]] and s["sure"] == [[0, 0], [1, 1]]


def test_two_hundred_sentences_stay_small():
    rng = np.random.default_rng(1)
    pairs = read_corpus(SAMPLE / "test.en", SAMPLE / "test.fr")
    page = explorer_html([sentence(k, s, t, rng) for k, (s, t) in enumerate(pairs)])
    assert len(pairs) == 200 and len(page.encode()) < 3 * 2**20, len(page.encode())


def test_plot_sentence_html_from_a_saved_attention_file_without_torch(models, tmp_path):
    att = tmp_path / "att.npz"
    r = invoke("align", "corpus", "--model", models / "rnn", *TEST, "-o", tmp_path / "a.align",
               "--save-attention", att, "--quiet")
    assert r.exit_code == 0, r.output
    out = tmp_path / "x.html"
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom attnalign.cli import app\n"
            f"r = CliRunner().invoke(app, {['plot', 'sentence', '--attention', str(att), '--index', '3', '--gold', str(SAMPLE / 'test.gold.naacl'), '--html', str(out)]!r})\n"  # noqa: E501
            "assert r.exit_code == 0, r.output\nassert 'torch' not in sys.modules\nprint('ok')\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]
    s = page_data(out.read_text())["sentences"][0]
    names = [v["name"] for v in s["views"]]
    assert len(names) >= 4 and any("reverse" in n for n in names) and any("soft" in n for n in names)
    assert s["sure"] and s["index"] == 3


def test_a_report_links_each_gallery_sentence_to_its_explorer(models, tmp_path):
    out = tmp_path / "rep"
    r = invoke("report", "--model", models / "rnn", *TEST, "--gold", SAMPLE / "test.gold.naacl", "-o", out,
               "--gallery", "2")
    assert r.exit_code == 0, r.output
    page = (out / "index.html").read_text()
    linked = [int(k) for k in re.findall(r'href="explorer.html#(\d+)"', page)]
    data = page_data((out / "explorer.html").read_text())
    assert linked and set(linked) <= {s["index"] for s in data["sentences"]}
    assert [s["label"].split(":")[0] for s in data["sentences"]][:2] == ["worst 1", "worst 2"]  # worst first


# runs in the page after load: what a person does, and what the page then shows
PROBE = """<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(String(e.message)));
const _error = console.error; console.error = (...a) => { window.__errors.push(a.join(" ")); _error(...a); };
window.addEventListener("load", () => {
  const r = {};
  const q = s => document.querySelectorAll(s);
  document.querySelector("#hm th[data-j='1']").dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
  r.rows = [...q("#hm tr.hl")].map(t => t.rowIndex);
  r.info = document.getElementById("info").textContent;
  const cell = document.querySelector("#hm td[data-i='0'][data-j='0']");
  cell.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
  r.cell = document.getElementById("info").textContent;
  r.gold = q("#hm td.gs, #hm td.gp").length;
  document.getElementById("gold").click();
  r.goldOff = q("#hm td.gs, #hm td.gp").length;
  r.where = document.getElementById("where").textContent;
  document.dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowRight", bubbles: true}));
  r.next = document.getElementById("where").textContent;
  r.views = q(".view").length;
  r.errors = window.__errors;
  const out = document.createElement("pre"); out.id = "probe"; out.textContent = JSON.stringify(r);
  document.body.appendChild(out);
});
</script></body>"""


@pytest.mark.skipif(BROWSER is None, reason="no Chromium: apt-get install chromium to run it")
def test_in_a_browser_hover_toggle_keys_and_no_error(tmp_path):
    rng = np.random.default_rng(2)
    pairs = read_corpus(SAMPLE / "test.en", SAMPLE / "test.fr")[:3]
    page = explorer_html([sentence(k, s, t, rng) for k, (s, t) in enumerate(pairs)], "sample")
    path = tmp_path / "probe.html"
    path.write_text(page.replace("</body>", PROBE))
    proc = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,900",
                           "--virtual-time-budget=10000", "--dump-dom", path.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    r = json.loads(html.unescape(found.group(1)))
    word = pairs[0][1][1]
    assert r["rows"] == [2] and r["info"].startswith(f'"{word}" attends to'), r  # row 2: under the header
    assert "weight" in r["cell"] and "gold: sure" in r["cell"]
    assert r["gold"] > 0 and r["goldOff"] == 0  # the gold toggle hides it
    assert (r["where"], r["next"]) == ("1 / 3", "2 / 3") and r["views"] == 4
    assert r["errors"] == []
    shot, plain = tmp_path / "shot.png", tmp_path / "plain.html"
    plain.write_text(page)
    subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,900",
                    f"--screenshot={shot}", plain.as_uri()], capture_output=True, timeout=120)
    assert shot.stat().st_size > 10_000  # a picture of the page was taken
