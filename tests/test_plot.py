"""`attnalign plot sentence`: real image files with the expected content, labels, overlays, errors."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import pytest
from helpers import SAMPLE, invoke

from attnalign.data.alignments import Alignment
from attnalign.eval.plot import Panel, figure_for, terminal_view

SRC = ["the", "red", "car", "."]
TGT = ["la", "voiture", "rouge", "."]


def diag_panel(**kw):
    m = np.full((4, 4), 0.02)
    for j, i in enumerate([0, 2, 1, 3]):
        m[j, i] = 0.94
    return Panel(m, SRC, TGT, [(0, 0), (2, 1), (1, 2), (3, 3)], **kw)


def test_figure_labels_match_the_tokens():
    fig = figure_for([diag_panel()])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == SRC
    assert [t.get_text() for t in ax.get_yticklabels()] == TGT
    im = ax.images[0]
    assert im.get_clim() == (0.0, 1.0)  # a fixed 0-1 colour scale


def test_overlays_tell_hits_misses_and_false_positives_apart():
    gold = Alignment(frozenset({(0, 0), (2, 1), (1, 2)}), frozenset({(3, 3)}))
    p = diag_panel(gold=gold)
    p.links = [(0, 0), (2, 1), (3, 2)]  # two hits, one false positive; gold 1-2 missed
    ax = figure_for([p]).axes[0]
    markers = {line.get_marker(): len(line.get_xdata()) for line in ax.lines}
    assert markers == {"o": 2, "x": 1}
    squares = {c.get_linestyle()[0][1] is None: len(c.get_paths()) for c in ax.collections}
    assert squares == {True: 3, False: 1}  # three sure squares (solid), one possible (dashed)
    assert "AER" in ax.get_title()


def test_a_long_pair_is_drawn_at_fewer_dots_a_cell_and_its_words_as_text(tmp_path):
    """A 150-word pair (a long sentence of a gallery) stays under MAX_PIXELS a side; a control character
    in a word is drawn as its escape, never as a glyph the font lacks."""
    import warnings

    from attnalign.eval.plot import MAX_PIXELS, save_figure

    n = 150
    words = [f"w{k}" for k in range(n - 1)] + ["bell\x07"]
    diagonal = [(k, k) for k in range(n)]
    p = Panel(np.eye(n), words, words, diagonal, gold=Alignment.from_links(diagonal))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "Glyph 7 missing from font"
        save_figure(figure_for([p]), tmp_path / "long.png")
    assert max(mpimg.imread(tmp_path / "long.png").shape[:2]) <= MAX_PIXELS
    assert (tmp_path / "long.png").stat().st_size < 2 << 20
    assert figure_for([p]).axes[0].get_xticklabels()[-1].get_text() == "bell\\x07"


def png_pixels(path):
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 200
    return img


def test_cli_png_from_strings_has_a_heatmap(models, tmp_path):
    out = tmp_path / "pair.png"
    r = invoke("plot", "sentence", "--model", models / "rnn", "--src", "the red car .", "--tgt",
               "la voiture rouge .", "-o", out, "--sym", "none")
    assert r.exit_code == 0, r.stderr
    img = png_pixels(out)
    rgb = img[..., :3]
    assert rgb.std() > 0.05  # not blank
    blue = (rgb[..., 2] > rgb[..., 0] + 0.3).mean()  # attention cells are shades of blue
    assert blue > 0.005  # of the whole image, title and legend included


@pytest.mark.parametrize(("ext", "magic"), [(".svg", b"<svg"), (".pdf", b"%PDF")])
def test_cli_other_formats(models, tmp_path, ext, magic):
    out = tmp_path / f"pair{ext}"
    r = invoke("plot", "sentence", "--model", models / "rnn", "--src", "the car", "--tgt", "la voiture",
               "-o", out)
    assert r.exit_code == 0, r.stderr
    data = out.read_bytes()
    assert magic in data[:400]
    if ext == ".pdf":  # TrueType fonts, never Type 3 (camera-ready checkers reject Type 3)
        assert b"/FontFile2" in data and b"/Type3" not in data  # embedded TrueType outlines
    else:  # the words are SVG text elements, editable
        assert b"<text" in data and b">voiture<" in data


def test_cli_index_gold_compare_and_terminal(models, tmp_path):
    out = tmp_path / "cmp.png"
    r = invoke("plot", "sentence", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt",
               SAMPLE / "test.fr", "--index", 4, "--gold", SAMPLE / "test.gold.pharaoh", "--compare",
               "-o", out, "--terminal")
    assert r.exit_code == 0, r.stderr
    png_pixels(out)
    words = (SAMPLE / "test.fr").read_text().splitlines()[4].split()
    assert all(w in r.stdout for w in words[:3]) and "AER" in r.stdout


def test_compare_title_names_only_what_the_panels_share(models):
    from attnalign.eval.plot import shared_settings
    from attnalign.nmt.aligner import AlignOptions
    from attnalign.workflows.views import model_panels

    panels = model_panels(models / "rnn", ["the", "car"], ["la", "voiture"], AlignOptions(), compare=True)
    assert [p.settings["sym"] for p in panels] == ["none", "none", "grow-diag-final-and", "soft"]
    title = shared_settings(panels)
    assert "sym" not in title and title["shift"] == panels[0].settings["shift"]
    assert panels[2].title == "grow-diag-final-and links over the forward attention"
    # a single panel's title says what the picture is first, the model's folder name last
    (single,) = model_panels(models / "rnn", ["the", "car"], ["la", "voiture"], AlignOptions())
    first, second = single.title.split("\n")
    assert first.startswith("grow-diag-final-and") and second.endswith(", model rnn")
    assert not single.title.startswith("rnn")


def test_html_heatmap_cells_say_words_weight_and_status():
    import html
    import re

    from attnalign.eval.plot import html_heatmap

    gold = Alignment(sure={(0, 0)}, possible={(0, 0), (1, 1), (2, 2)})
    p = Panel(np.array([[0.9, 0.1, 0.0], [0.25, 0.75, 0.0]]), ["<b>", "a&b", '"q"'], ["x", "y"],
              [(0, 0), (0, 1)], gold)
    page = html_heatmap(p)
    assert "<b>" not in page  # user words are text, never markup
    assert "&lt;b&gt;" in page and "&amp;" in page and "&quot;q&quot;" in page
    cells = re.findall(r'<td(?: class="([\w ]+)")? style="background:rgb\((\d+),(\d+),(\d+)\)'
                       r'(?:;color:(#\w+))?" title="([^"]*)">([^<]*)</td>', page)
    assert len(cells) == 6  # T x S, in row order
    tips = [html.unescape(c[5]) for c in cells]
    assert tips == ["<b> → x: 0.900; right link (gold sure)", "a&b → x: 0.100", '"q" → x: 0.000',
                    "<b> → y: 0.250; wrong link", "a&b → y: 0.750; gold possible link, not predicted",
                    '"q" → y: 0.000']
    assert [c[6] for c in cells] == ["●", "", "", "✗", "◇", ""]
    assert [c[0] for c in cells] == ["r gs", "", "", "w", "gp", ""]  # link colour, gold border
    # shaded as the PNG: darker for more weight; a link's mark in its class's colour (green, red), other
    # marks white on dark cells and black on light ones; a legend says what the marks mean
    shade = [sum(map(int, c[1:4])) for c in cells]
    assert shade[0] < shade[4] < shade[3] < shade[1] < shade[2]
    assert [c[4] for c in cells] == ["", "#000", "#000", "", "#fff", "#000"]
    assert "<caption>darker: more attention; ● right link, ✗ wrong link" in page


def test_cli_saved_attention(models, tmp_path):
    att = tmp_path / "a.npz"
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt",
               SAMPLE / "test.fr", "--save-attention", att, "--quiet")
    assert r.exit_code == 0
    r = invoke("plot", "sentence", "--attention", att, "--index", 2, "-o", tmp_path / "s.png",
               "--gold", SAMPLE / "test.gold.pharaoh", "--eos")
    assert r.exit_code == 0, r.stderr
    png_pixels(tmp_path / "s.png")


def test_cli_transformer_grid(models, tmp_path):
    out = tmp_path / "grid.png"
    r = invoke("plot", "sentence", "--model", models / "tf", "--src", "the red car .", "--tgt",
               "la voiture rouge .", "--layer", "all", "--head", "all", "-o", out)
    assert r.exit_code == 0, r.stderr
    png_pixels(out)


def test_terminal_view_marks_links():
    from rich.console import Console

    console = Console(record=True, width=120)
    console.print(terminal_view(diag_panel()))
    text = console.export_text()
    assert text.count("●") == 4 + 1 and "voiture" in text  # the four links and the legend


def test_terminal_view_breaks_the_title_where_the_figure_does():
    """The title's own line breaks are lines (they showed as ``\\x0a``); a control character in user
    text is still shown, not obeyed."""
    from rich.console import Console

    console = Console(record=True, width=120)
    console.print(terminal_view(diag_panel(title="soft: the matrix\nmodel runs/\x1b[2Jx")))
    text = console.export_text()
    assert "\\x0a" not in text and "soft: the matrix" in text and "\\x1b[2Jx" in text
    lines = [line.strip() for line in text.splitlines()]
    assert lines.index("soft: the matrix") + 1 == lines.index("model runs/\\x1b[2Jx")


def test_terminal_view_piped_keeps_the_weights_and_possible_links():
    from rich.console import Console

    panel = diag_panel()
    panel.links = [(0, 0)]
    panel.gold = Alignment(sure={(0, 0)}, possible={(0, 0), (1, 1)})
    console = Console(record=True, width=120)
    console.print(terminal_view(panel, plain=True))
    text = console.export_text()
    assert "◇" in text and "●" in text and "weight x 10" in text
    first = text.splitlines()[[k for k, line in enumerate(text.splitlines()) if line.strip()][1]]
    assert any(c.isdigit() for c in first)  # the weights as digits, no colour needed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--src", "a", "--tgt", "b"], "--output FILE"),
        (["--src", "a", "--tgt", "b", "-o", "x.gif"], "unknown image type"),
        (["--src", "a", "--tgt", "b", "-o", "x.png", "--gold", "g"], "--gold needs --index"),
        (["--src", "a", "-o", "x.png"], "give the pair"),
        (["--index", "9999", "-o", "x.png"], "out of range"),
        (["--src", "a", "--tgt", "b", "-o", "x.png", "--layer", "all"], "need a Transformer"),
    ],
)
def test_cli_errors(models, tmp_path, args, message):
    args = [tmp_path / a if a.startswith("x.") else a for a in args]
    if "--index" in args:
        args += ["--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr"]
    r = invoke("plot", "sentence", "--model", models / "rnn", *args)
    assert r.exit_code == 2 and message in r.stderr, r.stderr  # options that do not go together


def _media_box(path) -> tuple[float, float]:
    import re

    box = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)", path.read_bytes())
    return float(box.group(1)), float(box.group(2))


def test_paper_figures_title_width_and_font_size(models, tmp_path):
    base = ["plot", "sentence", "--model", models / "rnn", "--src", "the red car is here .", "--tgt",
            "la voiture rouge est ici .", "--sym", "none"]
    r = invoke(*base, "-o", tmp_path / "default.pdf")
    assert r.exit_code == 0, r.stderr
    w, _ = _media_box(tmp_path / "default.pdf")
    assert w <= 3.4 * 72  # a short pair prints at its own size in a 3.3-inch column
    r = invoke(*base, "-o", tmp_path / "column.pdf", "--width", "3.3", "--title", "")
    assert r.exit_code == 0, r.stderr
    assert _media_box(tmp_path / "column.pdf")[0] == pytest.approx(3.3 * 72, abs=0.5)  # exactly the width
    assert invoke(*base, "-o", tmp_path / "x.pdf", "--width", "0.2").exit_code == 2
    assert invoke(*base, "-o", tmp_path / "x.pdf", "--font-size", "0").exit_code == 2


def test_figure_style_reaches_the_labels_and_title():
    from attnalign.eval.plot import FONT_SIZE, FigureStyle

    ax = figure_for([diag_panel(title="forward")]).axes[0]
    assert {t.get_fontsize() for t in ax.get_yticklabels()} == {FONT_SIZE}
    assert ax.get_title() == "forward"
    ax = figure_for([diag_panel(title="forward")], style=FigureStyle(title="", font_size=11)).axes[0]
    assert {t.get_fontsize() for t in ax.get_xticklabels()} == {11} and ax.get_title() == ""
    ax = figure_for([diag_panel(title="forward")], style=FigureStyle(title="Figure 2: $x$")).axes[0]
    assert ax.get_title() == "Figure 2: $x$"
    long = Panel(np.eye(30), [f"w{i}" for i in range(30)], [f"v{i}" for i in range(30)])
    ax = figure_for([long], style=FigureStyle(width=3.3)).axes[0]  # the default font shrinks to fit
    assert max(t.get_fontsize() for t in ax.get_yticklabels()) < FONT_SIZE


def test_words_are_never_tex(tmp_path):
    from attnalign.eval.plot import save_figure

    p = Panel(np.eye(2), ["$\\notacommand$", "$5"], ["costs", "$"])  # mathtext would fail to parse it
    save_figure(figure_for([p]), tmp_path / "money.svg")
    assert "$\\notacommand$" in (tmp_path / "money.svg").read_text()


def test_pred_files_side_by_side_on_the_pairs_grid_without_a_model(tmp_path):
    from attnalign.workflows.views import sentence_panels

    other = tmp_path / "other.align"
    other.write_text("\n".join(["0-0"] * 4) + "\n")  # line 3: one link
    panels = sentence_panels(None, src=str(SAMPLE / "test.en"), tgt=str(SAMPLE / "test.fr"), index=3,
                             gold=str(SAMPLE / "test.gold.naacl"),
                             preds=[SAMPLE / "test.diagonal.align", other])
    assert [p.title for p in panels] == [str(SAMPLE / "test.diagonal.align"), str(other)]
    assert panels[1].links == [(0, 0)] and not panels[0].shaded and panels[0].matrix.max() == 0
    fig = figure_for(panels)
    for ax, p in zip(fig.axes, panels, strict=True):  # the title names the file (wrapped where long)
        assert ax.get_title().replace("\n", "").startswith(p.title)
    assert len(fig.axes) == 2  # two panels and no colour bar: there is no attention to scale
    out = tmp_path / "pair.png"
    r = invoke("plot", "sentence", "--pred", SAMPLE / "test.diagonal.align", "--pred", other, "--src",
               SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr", "--index", 3, "--gold",
               SAMPLE / "test.gold.naacl", "-o", out)
    assert r.exit_code == 0, r.stderr
    png_pixels(out)


def test_pred_over_the_models_attention(models, tmp_path):
    from attnalign.nmt.aligner import AlignOptions
    from attnalign.workflows.views import sentence_panels

    panels = sentence_panels(AlignOptions(device="cpu"), model=models / "rnn", src=str(SAMPLE / "test.en"),
                             tgt=str(SAMPLE / "test.fr"), index=3, preds=[SAMPLE / "test.diagonal.align"])
    model_panel, pred = panels
    assert pred.shaded and (pred.matrix == model_panel.matrix).all()
    assert pred.links == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (6, 5), (7, 6), (8, 7)]  # its line 3


@pytest.mark.parametrize(("lines", "args", "says", "code"), [
    ("0-0 9-9\n", ["--index", "0"], "link 9-9 lies outside the pair", 1),
    ("0-0\n", ["--index", "2"], "the prediction has 1 line; --index 2 is past its end", 1),
    ("0-0\n", [], "--pred draws line --index N", 2),
    ("0-0 x\n", ["--index", "0"], "cannot read 'x' as a Pharaoh link", 1),
])
def test_pred_errors(tmp_path, lines, args, says, code):
    bad = tmp_path / "bad.align"
    bad.write_text(lines)
    r = invoke("plot", "sentence", "--pred", bad, "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               "--terminal", *args)
    assert r.exit_code == code and says in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_thumbnail_draws_each_mark_in_its_cell():
    """The thumbnail's cells, by hand: a right link's cell holds a green circle, a wrong link's a red
    cross, a missed sure gold link a black square's edge, a possible one a grey dash; other cells the
    colour map's shade of their weight; the EOS column after a rule."""
    import matplotlib

    from attnalign.eval import thumbnail as th

    gold = Alignment(frozenset({(0, 0), (1, 2)}), frozenset({(0, 0), (1, 2), (2, 1)}))
    p = diag_panel(gold=gold, eos=np.array([0.0, 0.0, 0.5, 1.0]))
    p.links = [(0, 0), (3, 2)]  # right; wrong
    img, (x0, y0) = th._panel_image(p, th.CELL, "")
    c = th.CELL

    def pixel(i, j, dx=0.5, dy=0.5):
        return img.getpixel((int(x0 + (i + dx) * c), int(y0 + (j + dy) * c)))

    assert pixel(0, 0) == th.RIGHT and pixel(3, 2) == th.WRONG
    lo = 0.05 * c  # a gold square's edge, inside its cell
    assert pixel(1, 2, dx=0.5, dy=lo / c + 0.01) == th.INK  # missed sure: its top edge
    assert pixel(2, 1, dx=(lo + 1) / c, dy=lo / c + 0.01) == th.POSSIBLE  # possible: the first dash
    blues = matplotlib.colormaps["Blues"]
    assert pixel(1, 0) == tuple(blues(0.02, bytes=True)[:3])  # weight 0.02, no mark
    assert pixel(4, 3) == tuple(blues(1.0, bytes=True)[:3])  # the EOS column's weight 1
    assert img.getpixel((int(x0 + 4 * c), int(y0 + c / 2))) == th.RULE


def test_a_long_pair_s_thumbnail_is_bounded_and_its_words_are_text(tmp_path):
    """A 300-word pair stays under MAX_PIXELS a side and a few hundred KB; control characters and bytes
    that are not UTF-8 are drawn as escapes; the file is a palette PNG."""
    from PIL import Image

    from attnalign.eval.plot import MAX_PIXELS
    from attnalign.eval.thumbnail import save_thumbnail

    n = 300
    words = [f"w{k}" for k in range(n - 2)] + ["bell\x07", "caf\udce9"]
    diagonal = [(k, k) for k in range(n)]
    p = Panel(np.eye(n), words, words, diagonal, gold=Alignment.from_links(diagonal), title="t\x1b[2J")
    save_thumbnail([p], tmp_path / "long.png")
    with Image.open(tmp_path / "long.png") as img:
        assert max(img.size) <= MAX_PIXELS and img.mode == "P"
    assert (tmp_path / "long.png").stat().st_size < 1 << 20


@pytest.mark.parametrize(("args", "says"), [(["-o", "x.svg"], "draws a PNG"), (["--terminal"], "draws a PNG"),
                                            (["-o", "x.png", "--width", "3"], "fixed size")])
def test_thumbnail_errors(models, tmp_path, args, says):
    args = [tmp_path / a if a.startswith("x.") else a for a in args]
    r = invoke("plot", "sentence", "--model", models / "rnn", "--src", "a b", "--tgt", "c d", "--thumbnail",
               *args)
    assert r.exit_code == 2 and says in r.stderr, r.stderr


def test_cli_thumbnail_is_the_pairs_panels_drawn_quickly(models, tmp_path):
    """plot sentence --thumbnail writes the thumbnail of the panels -o would draw, with the title given."""
    from PIL import Image

    out = tmp_path / "t.png"
    r = invoke("plot", "sentence", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt",
               SAMPLE / "test.fr", "--index", 4, "--gold", SAMPLE / "test.gold.pharaoh", "--thumbnail",
               "--eos", "-o", out)
    assert r.exit_code == 0, r.stderr
    with Image.open(out) as img:
        rgb = np.asarray(img.convert("RGB")).astype(int)
    assert ((rgb[..., 1] - rgb[..., 0] > 80) & (rgb[..., 2] < 120)).sum() > 20  # green circles: right links
    r = invoke("plot", "sentence", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt",
               SAMPLE / "test.fr", "--index", 4, "--thumbnail", "--title", "", "-o", tmp_path / "u.png")
    assert r.exit_code == 0, r.stderr
    with Image.open(tmp_path / "u.png") as untitled:
        assert untitled.height < img.height  # no title lines, no score line
