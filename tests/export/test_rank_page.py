"""The standalone page of aw.explore(group) (export/rankpage.py): every rank's walkthrough in one
page with the selector's lines, each rank walked as its own widget would be; past the cap, which
ranks the page holds; and the CLI opening a `{rank}` pattern of watches or recordings."""

from __future__ import annotations

import json
import re

import autograd_widget as aw
from autograd_widget.__main__ import main
from autograd_widget.export.html import walkthrough
from autograd_widget.export.rankpage import carried_ranks
from tests.helpers.rankfiles import GLOO_CLOSED, failing, save_failures, save_watches, train


def page_walk(path):
    text = path.read_text(encoding="utf-8")
    assert "mod.mountWalkthroughRanks(" in text
    found = re.search(r'id="autograd-widget-walkthrough">(.*?)</script>', text, re.S)
    return json.loads(found.group(1))


def test_a_watch_groups_page_carries_every_rank_with_its_timeline(tmp_path):
    group = aw.load_watch(save_watches(tmp_path, [train(poisoned_from=3),
                                                  train(bad_step=2, poisoned_from=3)]))
    w = aw.explore(group)
    walk = page_walk(w.save_html(tmp_path / "ranks.html"))
    ranks = walk["ranks"]
    assert ranks["selected"] == 1 and ranks["carried"] == [0, 1] and ranks["world"] == 2
    assert ranks["kind"] == "watch" and ranks["pattern"] == group.pattern
    assert [line["label"] for line in ranks["lines"]] == [r["label"] for r in w.ranks]
    assert walk["watch_step"] == 2 and walk["timeline"]["first"]["step"] == 2  # rank 1's own
    other = ranks["walks"]["0"]
    assert list(ranks["walks"]) == ["0"]  # the selected rank is the page's own walkthrough
    assert other["watch_step"] == 3 and other["timeline"]["first"]["name"] == "MulBackward0"
    assert "ranks" not in other and other["steps"][-1]["scalars"]["done"]
    assert w.rank == 1 and w.stepper.done  # the live widget did not move
    w.close()


def test_a_recording_groups_page_opens_on_the_rank_shown(tmp_path):
    group = aw.load_recording(save_failures(tmp_path, [failing(GLOO_CLOSED),
                                                       failing("my backward is wrong")]))
    w = aw.explore(group)
    w.select_rank(0)
    walk = walkthrough(w)
    ranks = walk["ranks"]
    assert ranks["selected"] == 0 and list(ranks["walks"]) == ["1"] and ranks["kind"] == "recording"
    assert walk["failed"]["message"].startswith("[/pytorch/third_party/gloo")
    assert ranks["walks"]["1"]["failed"]["message"] == "my backward is wrong"
    w.close()


def test_past_the_cap_the_page_holds_the_opening_rank_and_the_lowest_others():
    assert carried_ranks(2, 1) == [0, 1]
    assert carried_ranks(20, 17, cap=16) == [*range(15), 17]
    assert carried_ranks(20, 3, cap=16) == list(range(16))


def test_the_cli_opens_a_rank_pattern_of_watches_and_of_recordings(tmp_path, capsys):
    pattern = save_watches(tmp_path, [train(), train(bad_step=1)])
    assert main([pattern, "--html", str(tmp_path / "w.html")]) == 0
    walk = page_walk(tmp_path / "w.html")
    assert walk["ranks"]["selected"] == 1 and list(walk["ranks"]["walks"]) == ["0"]
    assert "wrote" in capsys.readouterr().out
    pattern = save_failures(tmp_path, [failing(GLOO_CLOSED), failing("boom")])
    assert main([pattern, "--html", str(tmp_path / "r.html"), "--title", "two ranks"]) == 0
    walk = page_walk(tmp_path / "r.html")
    assert walk["ranks"]["selected"] == 1 and walk["title"] == "two ranks"
    # one watch file alone opens too (no selector)
    assert main([str(tmp_path / "run_0.awwatch"), "--html", str(tmp_path / "one.html")]) == 0
    one = (tmp_path / "one.html").read_text(encoding="utf-8")
    assert "mod.mountWalkthrough(" in one and "mod.mountWalkthroughRanks(" not in one
    # a pattern with no file: one error line naming rank 0's file, exit 2
    capsys.readouterr()
    assert main([str(tmp_path / "none_{rank}.awwatch"), "--html", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no rank's file matches") and "none_0.awwatch" in err
    assert not (tmp_path / "x.html").exists()
