"""``onmt-xl experiments``: the plan, the significance tests, and a resumable run through the stock CLIs."""

import json
import math
import os
import random
import subprocess
import sys

import pytest

from onmt_xl.experiments.jobs import train_throughput
from onmt_xl.experiments.plan import EXPERIMENTS, NOISE_RATIOS, SWAP_RATIOS, plan, swap_words
from onmt_xl.experiments.scoring import attention_aer, binomial_two_sided, reference_alignments, sign_test
from tests.conftest import run_env


def test_plan_trains_each_model_once_in_priority_order():
    jobs = plan(EXPERIMENTS, seeds=[1, 2], heads=4)
    names = [j.name for j in jobs]
    assert len(names) == len(set(names))
    assert names[:2] == ["baseline", "combination"]  # the main table first
    by = {j.name: j for j in jobs}
    # tau = H/2 is the main HeadXL; 0 % noise is the main Combination: not trained twice
    assert by["headxl"].experiments == ["main", "tau", "aer"] and "headxl_tau2" not in by
    assert {f"headxl_tau{t}" for t in (0, 1, 3, 4)} <= set(by)
    assert [by[f"combination_noise{round(100 * r)}"].overrides["xl_noise"] for r in NOISE_RATIOS] == list(NOISE_RATIOS)
    assert by["combination_seed2"].seed == 2 and by["baseline_seed2"].system == "baseline"
    assert by["combination_oracle"].xl_train == "align" and by["combination_oracle"].variants == ["oracle"]
    assert set(by["combination"].variants) >= {"test", "oracle", "gold_align", "test_align", "swap10", "swap50"}
    assert by["encoder_free_none"].overrides == {"xl_encoder_free_pe": "none"}
    assert by["disan"].experiments == ["main"] and by["exgre_literal"].experiments == ["sim"]
    assert names.index("exgre_literal") > names.index("encoder_free_inxl")  # a variant of ours: after the papers' experiments
    assert names[-1] == "disan_nogate" and by["disan_nogate"].experiments == ["main"]  # ours too, in the main table
    # an experiment given alone plans only its jobs
    assert [j.name for j in plan(["encoder_free"], [1], 4)] == ["encoder_free_none", "encoder_free", "encoder_free_inxl"]
    with pytest.raises(ValueError, match="unknown experiments"):
        plan(["mian"], [1], 4)


def test_swap_words_moves_the_requested_share():
    rng = random.Random(0)
    words = [f"w{i}" for i in range(20)]
    for ratio in SWAP_RATIOS:
        out = swap_words(words, ratio, rng)
        assert sorted(out) == sorted(words)
        assert sum(a != b for a, b in zip(out, words)) == 2 * round(ratio * 20 / 2)


def test_binomial_two_sided_by_hand():
    assert binomial_two_sided(0, 5) == pytest.approx(2 / 32)  # P(0) + P(5)
    assert binomial_two_sided(1, 5) == pytest.approx(12 / 32)  # P(0) + P(1) + P(4) + P(5)
    assert binomial_two_sided(2, 4) == pytest.approx(1.0)
    assert binomial_two_sided(0, 0) == 1.0
    scipy = pytest.importorskip("scipy.stats")
    for k, n in ((3, 17), (40, 100), (0, 30)):
        assert binomial_two_sided(k, n) == pytest.approx(scipy.binomtest(k, n).pvalue)


def test_sign_test_counts_sentences_that_raise_or_lower_corpus_bleu():
    refs = ["the cat sat on the mat", "a dog ran in the park", "he lived a hard life", "it rains today"]
    base = ["the cat on mat", "a dog ran in the park", "he lived hard life", "it rains today"]
    sys_ = ["the cat sat on the mat", "a dog ran in the park", "he lived a hard life", "rains it today"]
    st = sign_test(sys_, base, refs)
    assert (st.better, st.worse, st.ties) == (2, 1, 1)
    assert st.p_value == pytest.approx(binomial_two_sided(2, 3))


def test_chance_alignments_give_one_link_per_target_word():
    refs = reference_alignments([3, 2, 0], [2, 4, 3])
    assert refs["diagonal"] == [{(0, 0), (2, 1)}, {(0, 0), (0, 1), (1, 2), (1, 3)}, set()]
    assert [sorted(j for _, j in links) for links in refs["random"]] == [[0, 1], [0, 1, 2, 3], []]
    assert all(0 <= i < n for links, n in zip(refs["random"], [3, 2]) for i, _ in links)
    assert reference_alignments([30] * 5, [30] * 5, seed=1)["random"] != reference_alignments([30] * 5, [30] * 5, seed=2)["random"]


def test_attention_aer_reads_onmt_report_align_output():
    hyp = ["he lived ||| 0-0 2-1", "x ||| 0-0"]
    s = attention_aer(hyp, sure=[{(0, 0), (2, 1)}, {(1, 0)}], possible=[{(0, 0), (2, 1)}, {(1, 0)}])
    assert (s.precision, s.recall) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert s.aer == pytest.approx(1 - 4 / 6)


def test_train_throughput_skips_the_first_report():
    log = "\n".join(f"[x INFO] Step {k}/ 100; acc: 1; bsz: 1/1/1; {r}/ 900 tok/s;  3 sec;" for k, r in ((10, 50), (20, 100), (30, 200)))
    assert train_throughput(log) == 150


def _write_corpus(d, n_train=240, n_test=30):
    from onmt_xl.core.data import synthetic


    tr, te = synthetic.generate(n_train, seed=5), synthetic.generate(n_test, seed=6)
    synthetic.write(tr, str(d / "train"))
    synthetic.write(te, str(d / "dev"))
    (d / "gold.txt").write_text("".join(f"{' '.join(s)} ||| {' '.join(t)}\n" for s, t in zip(te.src, te.tgt)))
    (d / "gold.align").write_text("".join(" ".join(f"{i + 1}-{j + 1}" for i, j in sorted(ls)) + "\n" for ls in te.links))



def _aer_by_hand(links, sure, possible):
    """Och & Ney's AER from the link sets, counted here: 1 - (|A&S| + |A&P|) / (|A| + |S|), P including S."""
    a = s_ = as_ = ap = 0
    for hyp, sr, ps in zip(links, sure, possible):
        a, s_ = a + len(hyp), s_ + len(sr)
        as_ += sum(link in sr for link in hyp)
        ap += sum(link in sr or link in ps for link in hyp)
    return 1 - (as_ + ap) / (a + s_)


def _check_scores_by_hand(wd, res):
    """The scores in results.json, recomputed from the files of the run (not from its own code paths)."""
    import sacrebleu

    from onmt_xl.core.align.pharaoh import read_pharaoh

    def lines(path):
        return path.read_text(encoding="utf-8").split("\n")[:-1]

    comb, ref = res["jobs"]["combination"], lines(wd / "data" / "test.ref")
    hyp, base = lines(wd / "jobs" / "combination" / "hyp.test"), lines(wd / "jobs" / "baseline" / "hyp.test")
    t = comb["variants"]["test"]
    assert t["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyp, [ref], force=True).score, abs=1e-9)
    assert res["jobs"]["baseline"]["variants"]["test"]["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(base, [ref], force=True).score, abs=1e-9)
    # Collins et al.'s sign test: sentence i is better (worse) if putting the system's translation of i into the
    # baseline's output raises (lowers) corpus BLEU; p = exact two-sided binomial at 1/2
    whole = sacrebleu.corpus_bleu(base, [ref]).score
    swapped = [sacrebleu.corpus_bleu(base[:i] + [hyp[i]] + base[i + 1:], [ref]).score
               for i in range(len(ref)) if hyp[i] != base[i]]
    better, worse = sum(x > whole + 1e-12 for x in swapped), sum(x < whole - 1e-12 for x in swapped)
    assert (t["sign_better"], t["sign_worse"]) == (better, worse)
    n = better + worse
    assert t["p_sign"] == pytest.approx(min(1.0, sum(math.comb(n, i) for i in range(n + 1)
                                                     if math.comb(n, i) <= math.comb(n, better)) / 2**n) if n else 1.0)
    from onmt_xl.experiments.scoring import paired_bootstrap

    assert t["p_bootstrap"] == paired_bootstrap({"combination": hyp}, base, ref)["combination"]  # same seed, same files
    # AER of the attention links against the gold set (1-indexed, the kept lines) and against eflomal's test links
    keep = [int(k) for k in (wd / "data" / "gold.keep").read_text().split()]
    gold = [{tuple(int(x) - 1 for x in tok.split("-")) for tok in line.split()} for line in lines(wd / "data" / "gold.align")]
    gold = [gold[k] for k in keep]
    src = [line.split() for line in lines(wd / "data" / "test.src")]
    eflomal = [set(ls) for ls in read_pharaoh(str(wd / "align" / "test.gdfa"), [len(x) for x in src])]
    for variant, sure in (("gold_align", gold), ("test_align", eflomal)):
        att = [{tuple(map(int, tok.split("-"))) for tok in line.partition(" ||| ")[2].split()}
               for line in lines(wd / "jobs" / "combination" / f"hyp.{variant}")]
        v = comb["variants"][variant]
        assert v["sentences"] == 30 and v["aer"] == pytest.approx(_aer_by_hand(att, sure, sure), abs=1e-12)
    # chance references: the diagonal links (target word j of m -> source word floor((j + 1/2) n / m)) by hand,
    # and the out-of-vocabulary share of the gold source words against the source vocabulary
    chance = res["aer_references"]["gold_align"]
    gsrc = [line.split() for line in lines(wd / "data" / "gold.src")]
    gtgt = [line.split() for line in lines(wd / "data" / "gold.tgt")]
    diagonal = [{(int((j + 0.5) * len(x) / len(y)), j) for j in range(len(y))} if x else set() for x, y in zip(gsrc, gtgt)]
    assert chance["sentences"] == 30
    assert chance["diagonal"]["aer"] == pytest.approx(_aer_by_hand(diagonal, gold, gold), abs=1e-12)
    random_links = reference_alignments([len(x) for x in gsrc], [len(y) for y in gtgt])["random"]
    assert chance["random"]["aer"] == pytest.approx(_aer_by_hand(random_links, gold, gold), abs=1e-12)
    known = {line.split("\t")[0].split(" ")[0] for line in lines(wd / "vocab.src")}
    words = [w for x in gsrc for w in x]
    assert chance["src_oov"] == pytest.approx(sum(w not in known for w in words) / len(words), abs=1e-12)


def test_experiments_run_score_report_and_resume(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _write_corpus(data)
    wd, rep = tmp_path / "wd", tmp_path / "rep"
    cmd = [sys.executable, "-m", "onmt_xl.experiments", "experiments", "--data", str(data), "--src", "src", "--tgt", "tgt",
           "--test", "dev", "--valid-size", "20", "--gold-text", str(data / "gold.txt"), "--gold-align", str(data / "gold.align"),
           "--workdir", str(wd), "--experiments", "main,oracle,aer", "--only", "baseline,combination",
           "--preset", "demo", "--train-steps", "6", "--beam-size", "1", "--gpu", "no", "--report-dir", str(rep),
           "--parallel", "2", "--archive", str(tmp_path / "archive")]
    out = subprocess.run(cmd, capture_output=True, text=True, env=run_env())
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    res = json.loads((wd / "results.json").read_text())
    base, comb = res["jobs"]["baseline"], res["jobs"]["combination"]
    assert comb["parameters"] - base["parameters"] == 4 * 128  # InXL block fusion at d = 128
    info = json.loads((wd / "jobs" / "combination" / "done.json").read_text())
    assert info["concurrent_jobs"] == 2 and info["threads"] == max(1, (os.cpu_count() or 1) // 2)
    assert info["device"] == "cpu"
    from onmt_xl.core.precision import native_bf16
    assert info["cpu"] != "?" and info["cpu"] in native_bf16()[1]  # the CPU its -xl_cpu_precision line names
    assert set(comb["variants"]) == {"test", "valid", "oracle", "gold_align", "test_align"}
    assert set(base["variants"]) == {"test", "valid", "gold_align", "test_align"}  # no XL, no oracle variant
    _check_scores_by_hand(wd, res)
    assert res["preorderer"]["tau"] > res["preorderer"]["monotone_tau"]
    assert (wd / "data" / "test.swap30.src").exists()
    # the oracle variant read the test alignments: the command says so
    assert "-xl_align_path" in (wd / "jobs" / "combination" / "commands.sh").read_text()
    report = (rep / "RESULTS.md").read_text()
    assert f"| combination | {comb['parameters']:,} | +512 |" in report
    assert "†" in report.split("| combination |")[1].split("\n")[0]  # tok/s measured beside another job
    assert "Not run yet: none." not in report  # the report lists the jobs of every experiment
    assert "| *chance: random* |" in report and "outside the vocabularies" in report
    manifest = json.loads((wd / "manifest.json").read_text())
    assert manifest["versions"]["OpenNMT-py"] == "3.5.1" and manifest["train_steps"] == 6
    # resume: nothing is trained or translated again
    done = (wd / "jobs" / "baseline" / "done.json").stat().st_mtime_ns
    again = subprocess.run(cmd, capture_output=True, text=True, env=run_env())
    assert again.returncode == 0, again.stderr[-3000:]
    assert "onmt_translate" not in again.stdout and "Step" not in again.stdout
    assert (wd / "jobs" / "baseline" / "done.json").stat().st_mtime_ns == done
    # a fresh work directory restores the archive: same links, nothing trained or translated, same scores
    assert sorted(p.name for p in (tmp_path / "archive" / "jobs").iterdir()) == ["baseline", "combination"]
    assert not list((tmp_path / "archive").rglob("*.pt"))
    fresh = [c if c != str(wd) else str(tmp_path / "wd2") for c in cmd]
    again = subprocess.run(fresh, capture_output=True, text=True, env=run_env())
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "restored 2 finished job(s)" in again.stdout
    assert "onmt_translate" not in again.stdout and "Step" not in again.stdout and "aligning" not in again.stdout
    assert (tmp_path / "wd2" / "align" / "train.gdfa").read_bytes() == (wd / "align" / "train.gdfa").read_bytes()
    res2 = json.loads((tmp_path / "wd2" / "results.json").read_text())
    assert res2["jobs"]["combination"]["variants"] == res["jobs"]["combination"]["variants"]
    kept_cfg = (tmp_path / "wd2" / "jobs" / "baseline" / "config.yaml").read_text()
    assert f"{wd}/" not in kept_cfg and f"{tmp_path / 'wd2'}/data/train.src" in kept_cfg  # paths rewritten
    history = json.loads((tmp_path / "wd2" / "manifest.json").read_text())
    assert len(history["runs"]) == 3 and history["align_seconds"] == manifest["align_seconds"]  # the run's history kept
    first, resumed, restored = history["runs"]
    assert sorted(first["jobs_done"]) == ["baseline", "combination"] and first["status"] == "finished"
    assert resumed["jobs_done"] == [] == restored["jobs_done"] and restored["started"] >= first["started"]
    assert json.loads((tmp_path / "wd2" / "preorderer.json").read_text()) == res["preorderer"]
    # --report-only on a fresh work directory reports on the archive alone
    rep3 = tmp_path / "rep3"
    only = [c if c != str(wd) else str(tmp_path / "wd3") for c in cmd]
    only = [c if c != str(rep) else str(rep3) for c in only] + ["--report-only"]
    again = subprocess.run(only, capture_output=True, text=True, env=run_env())
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "restored 2 finished job(s)" in again.stdout and "onmt_" not in again.stdout
    row = report.split("| combination |")[1].split("\n")[0]
    assert row in (rep3 / "RESULTS.md").read_text()
    # a changed model is refused, naming the file, before anything is written
    manifest_text = (wd / "manifest.json").read_text()
    changed = subprocess.run([c if c != "demo" else "enja" for c in cmd], capture_output=True, text=True, env=run_env())
    assert changed.returncode == 2 and "config.yaml: differs" in changed.stderr
    assert (wd / "manifest.json").read_text() == manifest_text


def test_a_job_trained_on_a_gpu_is_the_same_job_on_a_cpu():
    from onmt_xl.experiments.jobs import _identity

    cpu = {"seed": 1, "train_steps": 6, "encoder_type": "transformer"}
    gpu = {**cpu, "gpu_ranks": [0], "world_size": 1}
    assert _identity(gpu) == _identity(cpu)
    assert _identity({**gpu, "seed": 2}) != _identity(cpu)  # what the job is still counts (train_steps may grow)


def test_a_job_configured_with_the_legacy_names_is_the_same_job(tmp_path):
    """A job directory written before the xl_ prefix (its config.yaml names inxl_fusion, cpu_precision,
    exact_resume, encoder_type exgre, ...) resumes under the new names: the runner does not call it changed."""
    import yaml

    from onmt_xl.core.errors import XLInputError
    from onmt_xl.experiments.jobs import _identity
    from onmt_xl.experiments.runner import Corpus, Job, Runner
    from onmt_xl.opennmt.names import LEGACY_DECODERS, LEGACY_ENCODERS, LEGACY_OPTIONS

    old_option = {new: old for old, new in LEGACY_OPTIONS.items()}
    old_component = {new: old for old, new in {**LEGACY_ENCODERS, **LEGACY_DECODERS}.items()}
    jobs = [Job("combination", "combination", 1), Job("exgre_literal", "exgre_literal", 1), Job("both_re", "both_re", 1),
            Job("encoder_free_none", "encoder_free", 1, overrides={"xl_encoder_free_pe": "none"}),
            Job("disan_nogate", "disan_nogate", 1)]
    runner = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), jobs, preset="demo", train_steps=8, gpu=False)
    for job in jobs:
        cfg = runner.job_config(job)
        old = {old_option.get(k, k): old_component.get(v, v) if k in ("encoder_type", "decoder_type") else v
               for k, v in cfg.items()}
        assert {"cpu_precision", "exact_resume"} <= set(old) and old != cfg
        assert _identity(old) == _identity(cfg)
        jd = tmp_path / "jobs" / job.name
        jd.mkdir(parents=True)
        (jd / "config.yaml").write_text(yaml.safe_dump(old, sort_keys=False))
        assert runner._checked_config(job) == cfg
        model = [k for k in old if k in LEGACY_OPTIONS and k not in ("cpu_precision", "exact_resume")]
        for key, value in [(k, "other") for k in model] + [("encoder_type", "transformer")]:
            (jd / "config.yaml").write_text(yaml.safe_dump({**old, key: value}, sort_keys=False))
            with pytest.raises(XLInputError, match="differs"):  # a legacy option's value still counts
                runner._checked_config(job)


def test_inxl_start_is_spelled_out_and_a_job_configured_before_keeps_identity(tmp_path):
    """Every configuration with InXL names its start (the option's default, the runner's ``inxl_init``, or the job's
    own override, in rising precedence); a config.yaml written before that names none and was trained with
    identity: it is the same job only where identity is asked for, and the refusal names the option."""
    import yaml

    from onmt_xl.core.errors import XLInputError
    from onmt_xl.experiments.runner import Job
    from onmt_xl.core.options_table import option

    jobs = [Job("inxl", "inxl", 1), Job("combination", "combination", 1), Job("encoder_free_inxl", "encoder_free_inxl", 1),
            Job("own", "combination", 1, overrides={"xl_inxl_init": "identity"}), Job("baseline", "baseline", 1),
            Job("headxl", "headxl", 1)]
    runner = _runner(tmp_path, jobs)
    starts = {j.name: runner.job_config(j).get("xl_inxl_init") for j in jobs}
    default = option("xl_inxl_init").default
    assert default == "absolute"
    assert starts == {"inxl": default, "combination": default, "encoder_free_inxl": default, "own": "identity",
                      "baseline": None, "headxl": None}
    runner.inxl_init = "identity"
    assert [runner.job_config(j).get("xl_inxl_init") for j in jobs] == ["identity"] * 4 + [None, None]
    for job in jobs[:3]:
        runner.inxl_init = "identity"
        legacy = {k: v for k, v in runner.job_config(job).items() if k != "xl_inxl_init"}
        jd = tmp_path / "jobs" / job.name
        jd.mkdir(parents=True)
        (jd / "config.yaml").write_text(yaml.safe_dump(legacy, sort_keys=False))
        assert runner._checked_config(job)["xl_inxl_init"] == "identity"
        runner.inxl_init = None
        with pytest.raises(XLInputError, match=r"needs now in xl_inxl_init \(identity there, absolute now\)"):
            runner._checked_config(job)


def test_alignment_model_reads_the_penultimate_layer(tmp_path):
    import torch

    from onmt_xl.experiments.runner import Corpus, Job, Runner

    job = Job("baseline", "baseline", 1)
    runner = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), [job], preset="demo", train_steps=4, gpu=False)
    from argparse import Namespace

    ckpt_dir = tmp_path / "jobs" / "baseline"
    ckpt_dir.mkdir(parents=True)
    torch.save({"model": {}, "generator": {}, "opt": Namespace(dec_layers=3, alignment_layer=-3, alignment_heads=1),
                "optim": {"big": torch.zeros(3)}}, str(runner.model_path(job)))
    copy = torch.load(str(runner.alignment_model(job)), weights_only=False)
    assert (copy["opt"].alignment_layer, copy["opt"].alignment_heads) == (1, 0) and "optim" not in copy


def _runner(tmp_path, jobs, **kw):
    from onmt_xl.experiments.runner import Corpus, Runner

    return Runner(Corpus("a", "b", "c", "d"), str(tmp_path), jobs, preset="demo", train_steps=4, gpu=False, **kw)


def test_parallel_jobs_run_side_by_side_and_a_failure_stops_new_ones(tmp_path, monkeypatch):
    import threading
    import time

    from onmt_xl.experiments.runner import Job

    jobs = [Job(f"j{k}", "baseline", k) for k in range(5)]
    runner = _runner(tmp_path, jobs, parallel=2)
    assert runner.threads == max(1, (os.cpu_count() or 1) // 2)
    started, running, most = [], [0], [0]
    lock = threading.Lock()

    def fake_job(k, job):
        with lock:
            started.append(job.name)
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        if job.name == "j1":
            raise RuntimeError("j1 broke")
        return True

    monkeypatch.setattr(runner, "_job", fake_job)
    with pytest.raises(RuntimeError, match="j1 broke"):
        runner._run_jobs()
    assert most[0] == 2  # two at a time
    assert started[:2] == ["j0", "j1"] and len(started) < 5  # plan order; no new job after the failure
    # the time budget: a job that reports False stops the queue and is named
    runner = _runner(tmp_path, jobs, parallel=1)
    monkeypatch.setattr(runner, "_job", lambda k, job: job.name != "j2")
    assert runner._run_jobs() == "j2"
    with pytest.raises(ValueError, match="--parallel 0"):
        _runner(tmp_path, jobs, parallel=0)


def test_parallel_jobs_find_opennmt_imported_before_their_threads_start(tmp_path):
    # OpenNMT's modules import each other in cycles: first imported by several job threads at once (each job's
    # parameter count loads its checkpoint), some threads got a half-initialized module and the wave died.
    script = f"""
import sys, threading
from onmt_xl.experiments.runner import Corpus, Job, Runner
assert "onmt" not in sys.modules
jobs = [Job(f"j{{k}}", "baseline", 1) for k in range(8)]
runner = Runner(Corpus("a", "b", "c", "d"), {str(tmp_path)!r}, jobs, preset="demo", train_steps=4, gpu=False, parallel=8)
barrier, errors = threading.Barrier(8), []
def job(k, j):
    barrier.wait()
    try:
        from onmt_xl.experiments.analysis import import_onmt
        import_onmt()
        from onmt.models import NMTModel
        from onmt.models.model_saver import load_checkpoint
    except Exception as e:
        errors.append(repr(e))
    return True
runner._job = job
runner._run_jobs()
print(errors)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=run_env(), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]"


def test_a_job_trained_to_its_last_step_but_not_recorded_is_recorded_without_training(tmp_path, monkeypatch):
    import torch

    import onmt_xl.experiments.jobs as jobs_mod
    from onmt_xl.experiments.runner import Job

    job = Job("baseline", "baseline", 1)
    runner = _runner(tmp_path, [job])
    jd = tmp_path / "jobs" / "baseline"
    jd.mkdir(parents=True)
    torch.save({}, runner.model_path(job))  # the run stopped after onmt_train, before done.json
    (jd / "train.log").write_text("[2026-11-26 07:46:20,749 INFO] Step 4/ 4; acc: 87.9; ppl: 5.3; "
                                  "xent: 1.7; lr: 0.00035; sents: 70; bsz: 11/17/1; 16097/25028 tok/s; 5 sec;\n")
    monkeypatch.setattr(runner, "_run", lambda *a, **k: pytest.fail("onmt_train ran again (-xl_exact_resume replays "
                                                                      "the data to the last step, then trains one more)"))
    monkeypatch.setattr(jobs_mod, "count_checkpoint_parameters", lambda path: {"parameters": 7, "buffers": 0})
    assert runner.train(job) is True
    info = json.loads((jd / "done.json").read_text())
    assert info["train_seconds"] is None and info["resumed_from"] is None and info["parameters"] == 7
    assert runner.train(job) is True  # recorded: nothing more to do


def test_after_job_runs_once_a_job_is_trained_and_translated(tmp_path, monkeypatch):
    from onmt_xl.experiments.runner import Job

    job = Job("j0", "baseline", 1, variants=["valid", "test"])
    runner = _runner(tmp_path, [job], parallel=1)
    events = []
    monkeypatch.setattr(runner, "retrain_if_restored_without_checkpoint", lambda j: None)
    monkeypatch.setattr(runner, "outputs_missing", lambda j: [])
    monkeypatch.setattr(runner, "train", lambda j: events.append(("train", j.name)) or True)
    monkeypatch.setattr(runner, "translate", lambda j, v: events.append(("translate", v)))
    runner.after_job = lambda j: events.append(("after", j.name))
    assert runner._job(1, job)
    assert events == [("train", "j0"), ("translate", "valid"), ("translate", "test"), ("after", "j0")]
    # a job the time budget stops before training is not finished: no after_job
    events.clear()
    monkeypatch.setattr(runner, "train", lambda j: False)
    assert not runner._job(1, job) and events == []


def test_a_second_runner_on_the_same_workdir_is_refused(tmp_path):
    from onmt_xl.core.errors import XLInputError

    first = _runner(tmp_path, [])
    held = first._lock_workdir()
    with pytest.raises(XLInputError, match="another onmt-xl run is using this work directory"):
        _runner(tmp_path, [])._lock_workdir()
    held.close()
    _runner(tmp_path, [])._lock_workdir().close()  # free again once the first is gone


def test_run_history_lines_say_how_each_run_ended():
    from onmt_xl.experiments.report.header import run_line as _run_line

    killed = dict(started="2026-01-01 10:00:00", updated="2026-01-01 10:30:00", wall_seconds=1800, status="running",
                  jobs_done=["baseline"], parallel=2)
    assert _run_line(killed) == ("- run started 2026-01-01 10:00:00: 30.0 min, no end recorded (still running, or "
                                 "killed; last record 2026-01-01 10:30:00); jobs finished: baseline")
    stopped = dict(killed, status="stopped by the time budget", stopped_before="disan", jobs_done=[])
    assert _run_line(stopped).endswith("30.0 min, stopped by the time budget before disan; jobs finished: none")
    old = dict(finished="2026-01-01 09:00:00", wall_seconds=120.0, stopped_before=None, parallel=1)  # before `started`
    assert _run_line(old) == "- run finished 2026-01-01 09:00:00: 2.0 min"
    assert _run_line(dict(old, stopped_before="baseline")).endswith("2.0 min, stopped by the time budget before baseline")


def test_report_tables_and_plots_from_hand_made_translations(tmp_path):
    """write_report on a work directory whose translations are made by hand (no training): every BLEU in
    the tables is sacrebleu's on those files, the claims follow them, and the three plots are PNGs."""
    import sacrebleu

    from onmt_xl.experiments.plan import EXPERIMENTS, plan
    from onmt_xl.experiments.report import write_report

    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(40)]
    refs = [" ".join(rng.choice(vocab) for _ in range(rng.randint(6, 12))) for _ in range(60)]

    def degrade(keep: float) -> list:  # drop each word with probability 1 - keep: lower BLEU for lower keep
        r = random.Random(round(keep * 1000))
        return [" ".join(w for w in ref.split() if r.random() < keep) or ref.split()[0] for ref in refs]

    wd = tmp_path / "wd"
    (wd / "data").mkdir(parents=True)
    (wd / "data" / "test.ref").write_text("\n".join(refs) + "\n")
    (wd / "data" / "valid.tgt").write_text("\n".join(refs) + "\n")
    (wd / "manifest.json").write_text(json.dumps({"model": {"heads": 4}, "train_steps": 10}))
    jobs = plan(EXPERIMENTS, [1, 2], heads=4)
    keep = {"baseline": 0.80, "headxl_tau0": 0.80, "headxl_tau1": 0.84, "headxl": 0.86, "headxl_tau3": 0.83,
            "headxl_tau4": 0.78, "combination": 0.88, "combination_noise5": 0.86, "combination_noise10": 0.84,
            "combination_noise15": 0.82, "combination_noise20": 0.79, "both_re": 0.81, "encoder_free": 0.90}
    for j in jobs:
        if j.name not in keep:
            continue  # reported as not run
        jd = wd / "jobs" / j.name
        jd.mkdir(parents=True)
        (jd / "done.json").write_text(json.dumps({"parameters": 1000 + len(j.name), "src_tok_s": 100.0,
                                                  "train_seconds": 600.0 + 60 * (j.name == "baseline")}))
        for v in j.variants:
            if v == "valid":  # a second test set: here the same references, other hypotheses
                (jd / "hyp.valid").write_text("\n".join(degrade(keep[j.name] - 0.05)) + "\n")
            elif v in ("test", "oracle") or v.startswith("swap"):
                shift = 0.0 if v in ("test", "oracle") else -int(v[4:]) / 200  # swapped sources: worse
                (jd / f"hyp.{v}").write_text("\n".join(degrade(keep[j.name] + shift)) + "\n")
    rep = tmp_path / "rep"
    write_report(wd, jobs, str(rep))
    md = (rep / "RESULTS.md").read_text()

    def bleu(name: str, variant: str = "test") -> str:
        hyp = (wd / "jobs" / name / f"hyp.{variant}").read_text().splitlines()
        return f"{sacrebleu.corpus_bleu(hyp, [refs], force=True).score:.2f}"

    tau_row = next(line for line in md.splitlines() if line.startswith("| BLEU |") and bleu("headxl_tau0") in line)
    assert tau_row == "| BLEU | " + " | ".join(bleu(n) for n in ("headxl_tau0", "headxl_tau1", "headxl", "headxl_tau3", "headxl_tau4")) + " |"
    noise_row = "| BLEU | " + " | ".join(bleu(n) for n in ("combination", "combination_noise5", "combination_noise10",
                                                           "combination_noise15", "combination_noise20")) + " |"
    assert noise_row in md
    assert f"Its {bleu('headxl_tau0')} against the baseline's {bleu('baseline')} (baseline) shows" in md
    valid_rows = [line for line in md.splitlines() if line.startswith("| valid BLEU |")]
    assert valid_rows == [
        "| valid BLEU | " + " | ".join(bleu(n, "valid") for n in ("headxl_tau0", "headxl_tau1", "headxl", "headxl_tau3", "headxl_tau4")) + " |",
        "| valid BLEU | " + " | ".join(bleu(n, "valid") for n in ("combination", "combination_noise5", "combination_noise10",
                                                                   "combination_noise15", "combination_noise20")) + " |"]
    assert f"| both_re | {bleu('both_re')} | {bleu('both_re', 'swap10')} |" in md
    assert "| inxl | not run |" in md
    assert "| none | not run | – | – | – |" in md  # encoder-free: not run; the baseline with its encoder beside it
    assert f"| *absolute, with the encoder (baseline)* | 1,008 | {bleu('baseline')} |" in md
    assert f"the encoder-free model beats the Transformer with its encoder ({bleu('encoder_free')} against {bleu('baseline')})" in md
    assert "10.0 min median over 13 job(s) trained alone" in md
    for png in ("results_tau.png", "results_noise.png", "results_robustness.png"):
        assert (rep / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"]({png})" in md
    # the claims read the same numbers: tau peaks at H/2, noise lowers BLEU
    tau_claim = next(line for line in md.splitlines() if "intermediate τ" in line)
    assert tau_claim.endswith("| held |") and f"τ=2: {bleu('headxl')}" in tau_claim
    assert next(line for line in md.splitlines() if "Noisy training" in line).endswith("| held |")


def test_header_says_which_jobs_were_taken_out_of_the_archive_and_why():
    from onmt_xl.experiments.report.header import header as _header

    manifest = {"retired": [{"date": "2026-11-24", "jobs": ["disan", "inxl"], "why": "Their systems changed."}]}
    lines = _header(manifest, {"jobs": {}, "preorderer": {}}, [])
    assert "Removed from the archive on 2026-11-24: disan, inxl. Their systems changed." in lines


def test_default_layout_is_one_single_thread_job_per_cpu_without_a_gpu(tmp_path, monkeypatch):
    from onmt_xl.experiments.runner import Corpus, Runner

    monkeypatch.setattr("os.cpu_count", lambda: 4)
    cpu = _runner(tmp_path / "cpu", [])
    assert (cpu.parallel, cpu.threads) == (4, 1)
    gpu = Runner(Corpus("a", "b", "c", "d"), str(tmp_path / "gpu"), [], preset="demo", train_steps=4, gpu=True)
    assert (gpu.parallel, gpu.threads) == (1, None)


def test_more_steps_reopen_a_job_and_a_refused_run_writes_nothing(tmp_path):
    """The pipeline derives validation and checkpoint steps from the steps: asking for more steps is the same model
    trained longer, not another job; a run refused for another configuration leaves the work directory as it was."""
    import yaml

    from onmt_xl.core.errors import XLInputError
    from onmt_xl.experiments.runner import Corpus, Job, Runner

    job = Job("baseline", "baseline", 1)
    short = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), [job], preset="demo", train_steps=400, gpu=False)
    cfg = short.job_config(job)
    jd = tmp_path / "jobs" / job.name
    jd.mkdir(parents=True)
    (jd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    (jd / "done.json").write_text("{}")
    longer = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), [job], preset="demo", train_steps=1200, gpu=False)
    assert longer.job_config(job)["valid_steps"] != cfg["valid_steps"]
    assert longer.config_problem(job) is None
    assert longer._checked_config(job)["train_steps"] == 1200 and not (jd / "done.json").exists()
    (jd / "done.json").write_text("{}")
    (jd / "config.yaml").write_text(yaml.safe_dump({**cfg, "heads": 1}, sort_keys=False))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(XLInputError, match=r"needs now in heads \(1 there, 8 now\)"):
        longer.run(["pipeline"])
    assert sorted(p.name for p in tmp_path.rglob("*") if p.name != ".lock") == before
    assert (jd / "done.json").exists() and not (tmp_path / "manifest.json").exists()
