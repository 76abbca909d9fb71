"""The decisive design (reports/PREREG_decisive.md): the test pairs carved from the training pairs by a rule fixed
in advance, its work directory, queue, report families, and the half-width projection."""

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from onmt_xl.core.errors import XLUsageError
from onmt_xl.experiments.runner import Corpus, Runner
from onmt_xl.experiments.stages import carve_rank, carve_test_pairs
from tests.conftest import REPO, run_env


def _pairs(n=200, seed=0):
    """Synthetic training pairs: unique sources but for a few repeated ones, some repeated targets."""
    rng = random.Random(seed)
    src = [f"s{k} {rng.choice('abc')}" for k in range(n)]
    tgt = [f"t{k % 150} x" for k in range(n)]  # targets 150.. repeat 0..
    for k in (10, 20, 30):  # three sources found twice (the second time with another target)
        src[k + 100] = src[k]
    return src, tgt


def test_carve_takes_eligible_training_pairs_deterministically_and_leaves_no_test_source_in_training():
    src, tgt = _pairs()
    held = ["h1 a", "s40  b"]  # validation/tuning sources; s40 may also be a training source (whitespace differs)
    src[40] = "s40 b"
    test = ["s50 a", "dev z"]  # a test source also found in training: that training pair must go
    src[50] = "s50 a"
    src[51] = ""  # an empty source is never carved
    cut = carve_test_pairs(src, tgt, held, test, 40)
    assert cut == carve_test_pairs(src, tgt, held, test, 40)  # deterministic
    assert len(cut.test) == len(set(cut.test)) == 40 and cut.test == sorted(cut.test)  # corpus order
    ineligible = {10, 20, 30, 110, 120, 130, 40, 50, 51}
    assert not set(cut.test) & ineligible and cut.eligible == 200 - len(ineligible)
    assert cut.removed == [50] and cut.train_before == 200
    kept = [s for i, s in enumerate(src) if i not in set(cut.test) | set(cut.removed)]
    sources = {" ".join(s.split()) for s in test + [src[i] for i in cut.test]}
    assert not sources & {" ".join(s.split()) for s in kept}  # no test source left in training
    assert not {src[i] for i in cut.test} & {" ".join(s.split()) for s in held}  # nor one of validation/tuning
    # the rule ranks pairs, not positions: the same pairs are carved from the corpus in any order
    order = list(range(200))
    random.Random(1).shuffle(order)
    shuffled = carve_test_pairs([src[i] for i in order], [tgt[i] for i in order], held, test, 40)
    assert sorted((src[order[i]], tgt[order[i]]) for i in shuffled.test) == sorted((src[i], tgt[i]) for i in cut.test)
    # a larger carve takes the smaller one's pairs and more; none takes nothing
    assert set(cut.test) < set(carve_test_pairs(src, tgt, held, test, 60).test)
    assert carve_test_pairs(src, tgt, held, test, 0).test == []
    with pytest.raises(XLUsageError, match="only 191 of the 200 training pairs are eligible"):
        carve_test_pairs(src, tgt, held, test, 192)
    with pytest.raises(XLUsageError, match="must be 0 or more"):
        carve_test_pairs(src, tgt, held, test, -1)


def test_the_carve_rank_is_the_same_for_a_pair_in_either_direction_and_depends_on_the_salt():
    assert carve_rank("a  b", "c d") == carve_rank("c d", "a b") != carve_rank("a b", "c d", salt="other")
    assert carve_rank("a b", "c d") != carve_rank("a b", "c e")


def _corpus(d, n=200):
    src, tgt = _pairs(n)
    src[5] = "dev0 w"  # a training pair whose source is a test (dev) source
    (d / "train.src").write_text("".join(s + "\n" for s in src))
    (d / "train.tgt").write_text("".join(t + "\n" for t in tgt))
    (d / "test.src").write_text("".join(f"dev{k} w\n" for k in range(6)))
    (d / "test.tgt").write_text("".join(f"t{k} x\n" for k in range(6)))  # references also training targets
    return Corpus(*(str(d / f) for f in ("train.src", "train.tgt", "test.src", "test.tgt")))


def _lines(path):
    return path.read_text().splitlines()


def test_a_carved_work_directory_tests_on_the_given_and_the_carved_pairs_and_trains_on_the_rest(tmp_path):
    corpus = _corpus(tmp_path)
    plain = Runner(corpus, str(tmp_path / "plain"), [], preset="demo", train_steps=4, gpu=False, valid_size=20,
                   tune_size=10)
    plain.stage_data()
    runner = Runner(corpus, str(tmp_path / "wd"), [], preset="demo", train_steps=4, gpu=False, valid_size=20,
                    tune_size=10, test_from_train=30)
    runner.stage_data()
    data, before = tmp_path / "wd" / "data", tmp_path / "plain" / "data"
    for split in ("valid", "tune"):  # validation and tuning are the study's, untouched
        for side in ("src", "tgt"):
            assert (data / f"{split}.{side}").read_bytes() == (before / f"{split}.{side}").read_bytes()
    train = list(zip(_lines(data / "train.src"), _lines(data / "train.tgt")))
    train0 = list(zip(_lines(before / "train.src"), _lines(before / "train.tgt")))
    test = list(zip(_lines(data / "test.src"), _lines(data / "test.ref")))
    assert test[:6] == list(zip(_lines(before / "test.src"), _lines(before / "test.ref")))  # the given pairs first
    carved = test[6:]
    assert len(carved) == 30 and all(pair in train0 for pair in carved)
    assert [p for p in train0 if p in carved] == carved  # in corpus order
    assert len(train) == len(train0) - 30 - 1 and ("dev0 w", "t5 x") not in train  # dev0's training pair removed
    assert not {s for s, _ in test} & ({s for s, _ in train} | set(_lines(data / "valid.src") + _lines(data / "tune.src")))
    assert all(len(_lines(data / f"test.swap{r}.src")) == 36 for r in (10, 50))
    record = json.loads((data / "carve.json").read_text())
    assert {k: record[k] for k in ("test_from_train", "carved", "removed_same_source", "train_before", "train_after",
                                   "test_given", "test_after")} == dict(test_from_train=30, carved=30,
                                                                        removed_same_source=1, train_before=170,
                                                                        train_after=139, test_given=6, test_after=36)
    assert json.loads((tmp_path / "wd" / "manifest.json").read_text())["carve"] == record
    # a second work directory carves the same pairs, byte for byte (a fresh one restored from an archive does)
    Runner(corpus, str(tmp_path / "again"), [], preset="demo", train_steps=4, gpu=False, valid_size=20, tune_size=10,
           test_from_train=30).stage_data()
    for name in ("train.src", "train.tgt", "test.src", "test.ref", "carve.json"):
        assert (tmp_path / "again" / "data" / name).read_bytes() == (data / name).read_bytes()
    # the staged splits serve only runs asking for the same carve
    runner.stage_data()
    for other, wd in ((0, "wd"), (31, "wd"), (30, "plain")):
        with pytest.raises(XLUsageError, match="was staged with --test-from-train"):
            Runner(corpus, str(tmp_path / wd), [], preset="demo", train_steps=4, gpu=False, valid_size=20,
                   tune_size=10, test_from_train=other).stage_data()
    assert not (before / "carve.json").exists()  # without a carve, the study's layout as before
    # dev0's training pair: a test source seen in training, unless the carve removed it
    assert json.loads((before / "overlap.json").read_text())["test"]["verbatim"] == 1
    assert "test" not in json.loads((data / "overlap.json").read_text())


def _parser():
    from onmt_xl.experiments.evidence import add_evidence

    parser = argparse.ArgumentParser()
    add_evidence(parser.add_subparsers(dest="command"))
    return parser


def test_the_decisive_tiers_run_the_primary_pair_first_then_headxl_then_inxl_with_the_seeds_given():
    from onmt_xl.experiments.evidence import tier_jobs

    parser = _parser()

    def names(*extra):
        return [j.name for j in tier_jobs(parser.parse_args(["evidence", "--stage", "main", "--steps", "30",
                                                             "--workdir", "w", *extra]))]

    five = [f"{s}_s{k}" for s in ("baseline", "combination") for k in range(1, 6)]
    assert sorted(names("--tier", "e")) == sorted(five) and names("--tier", "e")[:2] == ["baseline_s1", "combination_s1"]
    assert names("--tier", "e,f,g") == names("--tier", "e") + [f"headxl_s{k}" for k in range(1, 6)] + [
        f"inxl_s{k}" for k in range(1, 6)]
    eight = names("--tier", "e", "--seeds", "1,2,3,4,5,6,7,8")
    assert len(eight) == 16 and set(five) < set(eight)
    args = parser.parse_args(["evidence", "--stage", "main", "--test-from-train", "5000", "--workdir", "w"])
    assert args.test_from_train == 5000 and parser.parse_args(["evidence"]).test_from_train == 0


def test_report_families_given_on_the_command_line():
    from onmt_xl.experiments.evidence import FAMILIES, report_families

    parser = _parser()
    args = parser.parse_args(["evidence", "--stage", "report", "--families",
                              "primary=combination; secondary=headxl,inxl"])
    assert args.families == [("primary", ["combination"]), ("secondary", ["headxl", "inxl"])]
    assert report_families(["baseline", "combination"], args.families) == [("primary", ["combination"])]
    assert report_families(["baseline", "combination", "inxl", "disan"], args.families) == [
        ("primary", ["combination"]), ("secondary", ["inxl"]), ("disan", ["disan"])]
    assert report_families(["baseline", "combination", "inxl"]) == report_families(["baseline", "combination", "inxl"],
                                                                                   FAMILIES)
    assert parser.parse_args(["evidence"]).families is None
    for bad in ("primary", "primary=", "=combination", "primary=combinaton", ""):
        with pytest.raises(SystemExit):
            parser.parse_args(["evidence", "--families", bad])


def test_the_decisive_queue_runs_its_tiers_in_order_with_the_carve_and_seeds(tmp_path):
    """tools/study/decisive_queue.sh: each call parses as `onmt-xl evidence` options, with the preregistered carve and
    seeds, the ja→en tiers in one call and en→ja after them in its own work directory."""
    shim = tmp_path / "bin"
    shim.mkdir()
    calls = tmp_path / "calls"
    (shim / "python3").write_text(f'#!/bin/sh\nprintf "%s\\0" "$@" >> {calls}\nprintf "\\n" >> {calls}\n')
    (shim / "python3").chmod(0o755)
    env = dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}", P="3")
    script = str(REPO / "tools" / "study" / "decisive_queue.sh")
    parser = _parser()

    def run(*argv, **extra):
        if calls.exists():
            calls.unlink()
        proc = subprocess.run(["bash", script, *argv], capture_output=True, text=True, env=dict(env, **extra))
        lines = calls.read_text().splitlines() if calls.exists() else []
        return proc, [parser.parse_args(line.split("\0")[2:-1]) for line in lines]

    proc, (one,) = run()
    assert proc.returncode == 0, proc.stderr
    assert (one.stage, one.tier, one.steps, one.parallel, one.test_from_train, one.seeds, one.max_steps) == (
        "main", "e", 8000, 3, 5000, "1,2,3,4,5", 10000)
    assert (one.workdir, one.archive) == ("runs/decisive_jaen", "reports/decisive_jaen")
    assert one.inxl_init == "identity"  # the preregistered start, whatever the option's default
    proc, runs = run(TIERS="e f g enja", SEEDS="1,2,3,4,5,6,7,8")
    assert proc.returncode == 0, proc.stderr
    assert [(a.tier, a.workdir, a.seeds, a.test_from_train, a.inxl_init) for a in runs] == [
        ("e,f,g", "runs/decisive_jaen", "1,2,3,4,5,6,7,8", 5000, "identity"),
        ("e", "runs/decisive_enja", "1,2,3,4,5,6,7,8", 5000, "identity")]
    assert (runs[1].src, runs[1].tgt, runs[1].max_steps, runs[1].archive) == ("en", "ja", 8000, "reports/decisive_enja")
    # the other papers' systems on the design's split (reports/PREREG_decisive_baselines.md): seeds 1-2 whatever
    # SEEDS says, each in a call of its own; c (with Relative PE, tier i) and d keep the design's InXL start, h the
    # default
    proc, runs = run(TIERS="f g c d h", SEEDS="1,2,3,4,5")
    assert proc.returncode == 0, proc.stderr
    assert [(a.tier, a.workdir, a.archive, a.seeds, a.test_from_train, a.inxl_init) for a in runs] == [
        ("f,g", "runs/decisive_jaen", "reports/decisive_jaen", "1,2,3,4,5", 5000, "identity"),
        ("c,i", "runs/decisive_jaen", "reports/decisive_jaen", "1,2", 5000, "identity"),
        ("d", "runs/decisive_jaen", "reports/decisive_jaen", "1,2", 5000, "identity"),
        ("h", "runs/decisive_jaen", "reports/decisive_jaen", "1,2", 5000, None)]
    proc, runs = run(TIERS="e z")
    assert proc.returncode == 2 and "unknown tier 'z'" in proc.stderr and not runs
    proc, runs = run("status")  # each tier's table; a work directory not made yet is said, nothing run for it
    assert proc.returncode == 0, proc.stderr
    if (REPO / "runs" / "decisive_jaen").is_dir():
        assert [(a.stage, a.tier, a.workdir) for a in runs] == [("status", "e", "runs/decisive_jaen")]
    else:
        assert "not started" in proc.stdout and not runs
    # the addendum (reports/PREREG_decisive_tuned.md): its own work directory, always seeds 1-8, the tuned start
    proc, runs = run("status", TIERS="tuned", SEEDS="1,2,3")
    assert proc.returncode == 0, proc.stderr
    if (REPO / "runs" / "decisive_jaen_tuned").is_dir():
        assert [(a.tier, a.workdir, a.archive, a.seeds, a.inxl_init) for a in runs] == [
            ("e", "runs/decisive_jaen_tuned", "reports/decisive_jaen_tuned", "1,2,3,4,5,6,7,8", None)]
    else:
        assert "[tuned] runs/decisive_jaen_tuned: not started" in proc.stdout and not runs
    if not (REPO / "runs" / "decisive_jaen").is_dir():  # (where it is, the call would seed the addendum's files)
        proc, runs = run(TIERS="e tuned")  # apart: a call of its own after e's; nothing to seed it from: said
        assert proc.returncode == 1 and "runs/decisive_jaen is not prepared" in proc.stderr
        assert [a.workdir for a in runs] == ["runs/decisive_jaen"]


def _fake_archive(root, n=60, seeds=(1, 2, 3)):
    rng = random.Random(5)
    words = "the a cat dog sat on mat and ran far".split()
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 9))) for _ in range(n)]
    (root / "refs.txt").write_text("".join(r + "\n" for r in refs))
    for system, keep in (("baseline", 0.7), ("combination", 0.72)):
        for seed in seeds:
            jd = root / "archive" / "jobs" / f"{system}_s{seed}"
            jd.mkdir(parents=True)
            hyp = [" ".join(w if rng.random() < keep else rng.choice(words) for w in r.split()) for r in refs]
            with gzip.open(jd / "hyp.test.gz", "wt", encoding="utf-8") as f:
                f.write("".join(h + "\n" for h in hyp))
    return root / "archive", root / "refs.txt"


def test_the_half_width_projection_runs_on_an_archive_and_reproduces(tmp_path):
    archive, refs = _fake_archive(tmp_path)
    cmd = [sys.executable, str(REPO / "tools" / "study" / "decisive_design.py"), "--archive", str(archive), "--refs", str(refs),
           "--pool", "", "--sizes", "60,240", "--ks", "3,5", "--draws", "60", "--splits", "10", "--check-samples", "40"]
    outs = []
    for k in range(2):
        proc = subprocess.run(cmd + ["--json", str(tmp_path / f"r{k}.json")], capture_output=True, text=True,
                              env=run_env())
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[0] == outs[1]  # fixed seeds
    r = json.loads((tmp_path / "r0.json").read_text())
    assert [(row["n"], row["k"]) for row in r["rows"]] == [(60, 3), (60, 5), (240, 3), (240, 5)]
    assert [c["k"] for c in r["check"]] == [1, 2, 3] and r["test_sentences"] == 60
    by = {(row["n"], row["k"]): row for row in r["rows"]}
    # more sentences or more seeds narrow the interval; the pessimistic column is never the narrower
    assert by[240, 3]["half_width"] < by[60, 3]["half_width"] and by[60, 5]["half_width"] < by[60, 3]["half_width"]
    assert all(row["half_width_stays"] >= row["half_width"] - 1e-9 for row in r["rows"])
    proc = subprocess.run(cmd[:2] + ["--archive", str(tmp_path / "none"), "--refs", str(refs)], capture_output=True,
                          text=True, env=run_env())
    assert proc.returncode != 0 and "lacks hyp.test.gz" in proc.stderr


def test_the_report_of_a_carved_study_regenerates_from_its_archive_with_its_families(tmp_path):
    """A fresh work directory carves the same test pairs again, so the report from the archive is the same, with
    the preregistered families; a report that forgets the carve is refused by name, not scored on other pairs."""
    from onmt_xl.experiments.archive import save_run
    from tests.helpers import archive_noisy_runs

    corpus_dir = tmp_path / "corpus"
    corpus_dir.mkdir()
    _corpus(corpus_dir)
    wd, archive = tmp_path / "wd", tmp_path / "archive"
    runner = Runner(Corpus(*(str(corpus_dir / f) for f in ("train.src", "train.tgt", "test.src", "test.tgt"))),
                    str(wd), [], preset="demo", train_steps=4, gpu=False, valid_size=20, tune_size=10,
                    test_from_train=30)
    runner.stage_data()
    save_run(wd, archive)
    archive_noisy_runs(wd, archive, ("baseline", "combination", "headxl"))
    corpus_args = ["--data", str(corpus_dir), "--src", "src", "--tgt", "tgt", "--train", "train", "--test", "test",
                   "--valid-size", "20", "--tune-size", "10", "--gold-text", "", "--gold-align", ""]
    common = ["--stage", "report", *corpus_args, "--samples", "50", "--systems", "baseline,combination,headxl",
              "--seeds", "1,2", "--families", "primary=combination;secondary=headxl,inxl"]
    reports = []
    for k, (workdir, extra) in enumerate(((wd, ["--test-from-train", "30"]),
                                          (tmp_path / "elsewhere" / "wd", ["--archive", str(archive), "--test-from-train", "30"]),
                                          (tmp_path / "forgot" / "wd", ["--archive", str(archive)]))):
        out = tmp_path / f"report{k}.md"
        proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "evidence", "--workdir", str(workdir),
                               "--report", str(out), *common, *extra], capture_output=True, text=True, env=run_env())
        if k == 2:
            assert proc.returncode == 2 and "--test-from-train 30" in proc.stderr and "Traceback" not in proc.stderr
            continue
        assert proc.returncode == 0, proc.stderr
        reports.append(out.read_text())
        report = json.loads(out.with_suffix(".json").read_text())
        assert list(report["family_members"]) == ["primary", "secondary"] and report["test_sentences"] == 36
        assert {s: c["family"] for s, c in report["comparisons"].items()} == {"combination": "primary",
                                                                              "headxl": "secondary"}
    assert reports[1] == reports[0]


def test_the_report_command_names_the_systems_that_the_decisive_tiers_train():
    """tools/study/papers_report.sh lists the decisive split's other systems by hand; they must be tiers i+c and h."""
    from onmt_xl.experiments.evidence import TIERS

    text = (REPO / "tools" / "study" / "papers_report.sh").read_text(encoding="utf-8")
    lists = dict(line.split("=", 1) for line in text.splitlines()
                 if line.startswith(("DECISIVE_OTHERS=", "DECISIVE_TAB4=")))
    assert lists["DECISIVE_OTHERS"].split(",") == list(TIERS["i"][0] + TIERS["c"][0])
    assert lists["DECISIVE_TAB4"].split(",") == list(TIERS["h"][0])


def test_the_study_queue_runs_the_remaining_tiers_in_the_plans_order(tmp_path):
    """tools/study/study_queue.sh: the design's tier e (which prepares the work directory on a new machine), the addendum
    and its AER, tiers c (with i), d and h, then f and g with their AER (beside their training and once after), tier
    a's preorderer-quality runs, then the LSTM trained on to its plateau (last: a new machine starts it again);
    `status` asks each call's status and scores nothing."""
    import shutil

    root = tmp_path / "repo"
    (root / "tools" / "study").mkdir(parents=True)
    for name in ("study_queue.sh", "decisive_queue.sh", "evidence_queue.sh", "queue_lib.sh"):
        shutil.copy(REPO / "tools" / "study" / name, root / "tools" / "study" / name)
    made = root / "runs" / "decisive_jaen"  # a prepared design (seed_tuned copies its inputs)
    (made / "data").mkdir(parents=True)
    (made / "align").mkdir()
    for name in ("data/ready", "vocab.src", "vocab.tgt", "vocab_config.yaml", "preorderer.xlp", "preorderer.json"):
        (made / name).write_text("")
    for seed in range(1, 9):
        (root / "reports" / "decisive_jaen" / "jobs" / f"baseline_s{seed}").mkdir(parents=True)
        (root / "reports" / "decisive_jaen" / "jobs" / f"baseline_s{seed}" / "done.json").write_text("{}")
    shim = tmp_path / "bin"
    shim.mkdir()
    calls = tmp_path / "calls"
    # tiers f and g's training takes 3 s here: their AER (every AER_EVERY = 1 s) runs beside it, then once more
    (shim / "python3").write_text(f'#!/bin/sh\nprintf "%s\\0" "$@" >> {calls}\nprintf "\\n" >> {calls}\n'
                                  'case "$*" in *"--stage main"*"--tier f,g"*) sleep 3 ;; esac\n')
    (shim / "python3").chmod(0o755)
    env = dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}", AER_EVERY="1")
    for var in ("TIERS", "SEEDS", "S", "P"):
        env.pop(var, None)
    parser = _parser()
    proc = subprocess.run(["bash", str(root / "tools" / "study" / "study_queue.sh")], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    runs = [parser.parse_args(line.split("\0")[2:-1]) for line in calls.read_text().splitlines()]
    fg_aer = [i for i, a in enumerate(runs) if a.stage == "aer" and a.tier == "f,g"]
    assert len(fg_aer) >= 2 and fg_aer == list(range(fg_aer[0], fg_aer[-1] + 1))  # beside the training, and after
    assert runs[fg_aer[0] - 1].stage == "main" and runs[fg_aer[0] - 1].tier == "f,g"
    runs = runs[:fg_aer[0]] + runs[fg_aer[-1]:]
    assert [(a.stage, a.tier, a.workdir, a.seeds) for a in runs] == [
        ("main", "e", "runs/decisive_jaen", "1,2,3,4,5,6,7,8"),
        ("main", "e", "runs/decisive_jaen_tuned", "1,2,3,4,5,6,7,8"),
        ("aer", "e", "runs/decisive_jaen_tuned", "1,2,3,4,5,6,7,8"),
        ("main", "c,i", "runs/decisive_jaen", "1,2"),
        ("main", "d", "runs/decisive_jaen", "1,2"),
        ("main", "h", "runs/decisive_jaen", "1,2"),
        ("main", "f,g", "runs/decisive_jaen", "1,2,3,4,5,6,7,8"),
        ("aer", "f,g", "runs/decisive_jaen", "1,2,3,4,5,6,7,8"),
        ("main", "a", "runs/evidence_jaen", None),
        ("plateau", "a", "runs/decisive_jaen", "1,2")]
    assert [a.inxl_init for a in runs] == ["identity", None, None, "identity", "identity", None, "identity",
                                           "identity", None, None]  # the addendum and tier h: the default start
    plateau = runs[-1]  # the LSTM trained on to its own plateau (reports/PREREG_decisive_baselines.md, Deviations)
    assert (plateau.plateau_system, plateau.plateau_from, plateau.score_every, plateau.parallel) == ("lstm", 8000, 1000, 2)
    assert all(a.archive == "reports/" + a.workdir.split("/")[1] for a in runs)
    assert runs[-2].preorder_pairs == "10000,25000" and runs[2].test_from_train == 5000
    assert (root / "reports" / "decisive_jaen_tuned" / "jobs" / "baseline_s8" / "done.json").exists()
    calls.unlink()
    proc = subprocess.run(["bash", str(root / "tools" / "study" / "study_queue.sh"), "status"], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    status = [parser.parse_args(line.split("\0")[2:-1]) for line in calls.read_text().splitlines()]
    assert [(a.stage, a.tier, a.workdir.split("/")[1]) for a in status] == [  # one table per tier, no aer
        ("status", "e", "decisive_jaen"), ("status", "e", "decisive_jaen_tuned"), ("status", "c,i", "decisive_jaen"),
        ("status", "d", "decisive_jaen"), ("status", "h", "decisive_jaen"), ("status", "f", "decisive_jaen"),
        ("status", "g", "decisive_jaen"), ("status", "a", "evidence_jaen"), ("plateau-status", "a", "decisive_jaen")]
    bad = subprocess.run(["bash", str(root / "tools" / "study" / "study_queue.sh"), "stat"], capture_output=True, text=True,
                         env=env)
    assert bad.returncode == 2 and "unknown argument 'stat'" in bad.stderr


def _papers_report_calls(root: Path, finished: Dict[str, range]) -> List[str]:
    """Run a copy of tools/study/papers_report.sh in ``root`` over an archive ``reports/decisive_jaen`` holding the
    ``finished`` jobs (system -> seeds), ``python3`` replaced by a logger; its calls, one line each (its work
    directory: ``root/work``)."""
    import shutil

    (root / "tools" / "study").mkdir(parents=True)
    shutil.copy(REPO / "tools" / "study" / "papers_report.sh", root / "tools" / "study")
    for system, seeds in finished.items():
        for seed in seeds:
            job = root / "reports" / "decisive_jaen" / "jobs" / f"{system}_s{seed}"
            job.mkdir(parents=True)
            (job / "done.json").write_text("{}")
            (job / "hyp.test.gz").write_bytes(b"")
    bin_dir, log = root / "bin", root / "calls.log"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f'#!/bin/bash\nprintf "%s\\n" "$*" >> {log}\n')
    (bin_dir / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "WORK": str(root / "work")}
    proc = subprocess.run(["bash", str(root / "tools" / "study" / "papers_report.sh")], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return log.read_text().splitlines()


def test_the_report_analyses_a_secondary_only_once_all_its_runs_are_finished(tmp_path):
    """tools/study/papers_report.sh (reports/PREREG_decisive.md): HeadXL and InXL join the decisive report's systems only
    with every seed of the primary's analysis archived; until then only their tiers' progress rows name them, with
    those seeds. The secondary family is declared whole all along."""
    calls = _papers_report_calls(tmp_path / "repo", {"baseline": range(1, 9), "combination": range(1, 9),
                                                     "headxl": range(1, 9), "inxl": range(1, 6)})
    decisive = next(c for c in calls if "--report reports/DECISIVE_jaen.md" in c)
    assert "--systems baseline,combination,headxl,relative_pe," in decisive
    assert "inxl," not in decisive.split("--systems ")[1].split()[0].replace("encoder_free_inxl", "")
    # the family declared whole: InXL still belongs to it, so HeadXL's row reads partial until InXL joins
    assert "--families primary=combination;secondary=headxl,inxl;the other baselines=" in decisive
    papers = next(c for c in calls if c.startswith("-m onmt_xl.experiments papers"))
    assert "--progress reports/decisive_jaen:f,g:1,2,3,4,5,6,7,8" in papers


def test_once_exgre_and_refsr_have_8_seeds_the_report_also_reads_the_design_without_seeds_3_to_8(tmp_path):
    """tools/study/papers_report.sh (issue 78): while ExGRE's and ReFSR's seeds 3-8 train, their progress row is named
    and the design is read once; with all 12 archived it is read again from a view of its archive without them
    (``decisive_2seeds``), which ``onmt-xl papers`` gets beside it. The view also leaves out the encoder-free systems'
    seeds 3-8 (reports/PREREG_encfree_seeds.md), archived or not, and keeps every other system's seeds."""
    def finished(seeds):
        return {"baseline": range(1, 9), "combination": range(1, 9), "exgre": seeds, "refsr": seeds,
                "disan": range(1, 3), "encoder_free": range(1, 5), "encoder_free_relative": range(1, 4),
                "encoder_free_inxl": range(1, 4), "encoder_free_none": range(1, 3)}

    calls = _papers_report_calls(tmp_path / "training", finished(range(1, 6)))
    papers = next(c for c in calls if c.startswith("-m onmt_xl.experiments papers"))
    assert "--progress reports/decisive_jaen:c:3,4,5,6,7,8:exgre,refsr" in papers
    assert "--progress reports/decisive_jaen:c:3,4,5,6,7,8:encoder_free --progress " \
        "reports/decisive_jaen:h:3,4,5,6,7,8:encoder_free_relative,encoder_free_inxl" in papers
    assert not any("DECISIVE_jaen_2seeds" in c for c in calls) and "decisive_2seeds" not in papers
    root = tmp_path / "done"
    (root / "reports" / "decisive_jaen").mkdir(parents=True)
    (root / "reports" / "decisive_jaen" / "manifest.json").write_text("{}")
    calls, work = _papers_report_calls(root, finished(range(1, 9))), root / "work"
    before = next(c for c in calls if "--report reports/DECISIVE_jaen_2seeds.md" in c)
    assert f"--archive {work}/decisive_jaen_2seeds_archive " in before
    now = next(c for c in calls if "--report reports/DECISIVE_jaen.md" in c)
    assert before.split("--archive")[0].replace("decisive_jaen_2seeds", "decisive_jaen") == now.split("--archive")[0]
    view = work / "decisive_jaen_2seeds_archive"
    assert sorted(p.name for p in (view / "jobs").iterdir()) == sorted(
        [f"baseline_s{s}" for s in range(1, 9)] + [f"combination_s{s}" for s in range(1, 9)]
        + ["disan_s1", "disan_s2", "exgre_s1", "exgre_s2", "refsr_s1", "refsr_s2"]
        + [f"encoder_free{v}_s{s}" for v in ("", "_relative", "_inxl", "_none") for s in (1, 2)])
    assert (view / "manifest.json").is_symlink()
    papers = next(c for c in calls if c.startswith("-m onmt_xl.experiments papers"))
    assert "--study decisive_2seeds=reports/DECISIVE_jaen_2seeds.json" in papers
