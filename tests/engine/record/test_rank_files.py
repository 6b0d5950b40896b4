"""Bad sets of rank files (`{rank}` in the path): each a ValueError naming the file and what
differs, and nothing handed back half loaded."""

from __future__ import annotations

import re

import pytest
import torch

import autograd_widget as aw


def _watch(name="w", every=1):
    w = torch.ones(2, requires_grad=True)
    watch = aw.watch(params={name: w}, every=every)
    loss = (w * 3).sum()
    with watch.step(loss):
        loss.backward()
    return watch


def _rec(op=torch.mul):
    x = torch.ones(2, requires_grad=True)
    loss = op(x, 3.0).sum()
    with aw.record(loss) as rec:
        loss.backward()
    return rec


def _save(obj, path, rank, world, **meta):
    obj.meta.update({"rank": rank, "world_size": world, **meta})
    return obj.save(path)


def _watches(tmp_path, *ranks, world=None, objs=None, **meta_of):
    world = world if world is not None else len(ranks)
    for r in ranks:
        obj = (objs or {}).get(r) or _watch()
        obj.meta.update({"rank": r, "world_size": world, **meta_of.get(f"m{r}", {})})
        obj.save(tmp_path / f"run_{r}.awwatch")
    return tmp_path / "run_{rank}.awwatch"


def test_no_file_matches_the_pattern(tmp_path):
    with pytest.raises(ValueError, match=r"no rank's file matches .*run_\{rank\}\.awwatch.*"
                                         r"rank 0's would be .*run_0\.awwatch"):
        aw.load_watch(tmp_path / "run_{rank}.awwatch")
    with pytest.raises(ValueError, match="no rank's file matches"):
        aw.load_recording(tmp_path / "rec_{rank}.awrec")


def test_a_rank_missing_in_the_middle(tmp_path):
    pattern = _watches(tmp_path, 0, 2, world=3)
    with pytest.raises(ValueError, match=r"rank 1's file .*run_1\.awwatch is missing, but "
                                         r".*run_2\.awwatch \(rank 2\) exists"):
        aw.load_watch(pattern)


def test_only_rank_1_present(tmp_path):
    pattern = _watches(tmp_path, 1, world=2)
    with pytest.raises(ValueError, match=r"rank 0's would be .*run_0\.awwatch \(files of ranks "
                                         r"\[1\] exist\)"):
        aw.load_watch(pattern)


def test_a_file_from_another_world_size(tmp_path):
    pattern = _watches(tmp_path, 0, 1, world=2, m1={"world_size": 4})
    with pytest.raises(ValueError, match=r"run_1\.awwatch is from a run of world size 4, but 2 "
                                         r"rank file\(s\) match .*run_2\.awwatch is missing"):
        aw.load_watch(pattern)


def test_trailing_ranks_missing(tmp_path):
    pattern = _watches(tmp_path, 0, 1, world=3)
    with pytest.raises(ValueError, match=r"run_0\.awwatch is from a run of world size 3, but 2 "
                                         r"rank file\(s\).*run_2\.awwatch is missing"):
        aw.load_watch(pattern)


def test_a_file_that_holds_another_ranks_data(tmp_path):
    pattern = _watches(tmp_path, 0, 1, m1={"rank": 0})
    with pytest.raises(ValueError, match=r"run_1\.awwatch holds rank 0's watch .* not rank 1's"):
        aw.load_watch(pattern)


@pytest.mark.parametrize(("key", "value"), [("torch", "2.0.0"), ("every", 5), ("model", "GPT2")])
def test_files_of_different_runs(tmp_path, key, value):
    pattern = _watches(tmp_path, 0, 1, m1={key: value})
    msg = rf"run_1\.awwatch and .*run_0\.awwatch are of different runs: {key} is {value!r}"
    with pytest.raises(ValueError, match=msg):
        aw.load_watch(pattern)


def test_watches_of_different_structures(tmp_path):
    pattern = _watches(tmp_path, 0, 1, objs={1: _watch("v")})
    with pytest.raises(ValueError, match=r"run_1\.awwatch and .*run_0\.awwatch are of different "
                                         r"structures \(parameters only rank 0 watched: \['w'\]; "
                                         r"only this rank: \['v'\]\)"):
        aw.load_watch(pattern)


def test_recordings_of_different_graphs_or_runs(tmp_path):
    _save(_rec(), tmp_path / "rec_0.awrec", 0, 2)
    _save(_rec(torch.add), tmp_path / "rec_1.awrec", 1, 2)
    with pytest.raises(ValueError, match=re.escape("are of different structures (node n1 is "
                                                   "MulBackward0 on rank 0, AddBackward0 on")):
        aw.load_recording(tmp_path / "rec_{rank}.awrec")
    _save(_rec(), tmp_path / "rec_1.awrec", 1, 2, keep="tensors")
    with pytest.raises(ValueError, match=r"rec_1\.awrec and .*rec_0\.awrec are of different "
                                         r"runs: keep is 'tensors'"):
        aw.load_recording(tmp_path / "rec_{rank}.awrec")
    _save(_rec(), tmp_path / "rec_1.awrec", 1, 2)
    group = aw.load_recording(tmp_path / "rec_{rank}.awrec")
    assert group.ranks == [0, 1] and group.recording(1).meta["rank"] == 1


def test_a_broken_rank_file_names_itself_and_the_limits_apply_to_every_rank(tmp_path):
    _save(_rec(), tmp_path / "rec_0.awrec", 0, 2)
    (tmp_path / "rec_1.awrec").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"rec_1\.awrec"):
        aw.load_recording(tmp_path / "rec_{rank}.awrec")
    _save(_rec(), tmp_path / "rec_1.awrec", 1, 2)
    with pytest.raises(ValueError, match=r"rec_0\.awrec.*max_manifest_bytes=10"):
        aw.load_recording(tmp_path / "rec_{rank}.awrec", max_manifest_bytes=10)


def test_rank_numbers_are_exact_and_the_pattern_may_name_a_folder(tmp_path):
    for r in range(2):
        (tmp_path / f"r{r}").mkdir()
        _save(_watch(), tmp_path / f"r{r}" / "w.awwatch", r, 2)
    group = aw.load_watch(tmp_path / "r{rank}" / "w.awwatch")
    assert group.ranks == [0, 1] and group.paths[1].parent.name == "r1"
    with pytest.raises(KeyError, match=r"ranks 0\.\.1"):
        group.watch(2)
    # "run_01" is not rank 1's file: a gap check does not count it
    _save(_watch(), tmp_path / "run_0.awwatch", 0, 1)
    _save(_watch(), tmp_path / "run_01.awwatch", 1, 2)
    assert aw.load_watch(tmp_path / "run_{rank}.awwatch").ranks == [0]
