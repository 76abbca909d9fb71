"""The convergence study's pieces: tuning split, learning-curve logs, exact-resume records, growing jobs."""

import json

import pytest
import yaml

from onmt_xl.core.errors import XLInputError, XLUsageError
from onmt_xl.experiments.evidence import curve_jobs, validation_log
from onmt_xl.experiments.jobs import exact_resume_log
from onmt_xl.experiments.runner import Corpus, Runner


def _corpus(d, n=60):
    for side in ("src", "tgt"):
        (d / f"train.{side}").write_text("".join(f"{side}{k} w\n" for k in range(n)))
        (d / f"test.{side}").write_text("".join(f"{side}t{k} w\n" for k in range(5)))
    return Corpus(str(d / "train.src"), str(d / "train.tgt"), str(d / "test.src"), str(d / "test.tgt"))


def test_tuning_split_is_the_last_pairs_and_apart_from_validation(tmp_path):
    runner = Runner(_corpus(tmp_path), str(tmp_path / "wd"), [], preset="demo", train_steps=4, gpu=False,
                    valid_size=10, tune_size=8)
    runner.stage_data()
    data = tmp_path / "wd" / "data"
    lines = {n: (data / f"{n}.src").read_text().splitlines() for n in ("train", "valid", "tune")}
    assert lines["tune"] == [f"src{k} w" for k in range(52, 60)]
    assert lines["valid"] == [f"src{k} w" for k in range(42, 52)]
    assert lines["train"] == [f"src{k} w" for k in range(42)]
    assert runner.splits() == ("test", "valid", "tune", "train")


def test_without_a_tuning_split_the_old_layout_stays(tmp_path):
    runner = Runner(_corpus(tmp_path), str(tmp_path / "wd"), [], preset="demo", train_steps=4, gpu=False, valid_size=10)
    runner.stage_data()
    assert not (tmp_path / "wd" / "data" / "tune.src").exists()
    assert (tmp_path / "wd" / "data" / "valid.src").read_text().splitlines()[0] == "src50 w"
    assert runner.splits() == ("test", "valid", "train")


def test_held_out_splits_must_leave_training_pairs(tmp_path):
    runner = Runner(_corpus(tmp_path), str(tmp_path / "wd"), [], preset="demo", train_steps=4, gpu=False,
                    valid_size=30, tune_size=30)
    with pytest.raises(ValueError, match="leave no training pairs"):
        runner.stage_data()


LOG = """[x INFO] Start training loop and validate every 500 steps...
[x INFO] Step 500/ 2000; acc: 10
[x INFO] Validation perplexity: 90.5
[x INFO] Validation accuracy: 20.1
[x INFO] Validation perplexity: 40.0
[x INFO] Validation accuracy: 30.0
[x INFO] Validation perplexity: 35.0
[x INFO] Loading checkpoint from /w/jobs/b/model_step_1000.pt
[x INFO] Start training loop and validate every 500 steps...
[x INFO] -exact_resume: skipping the 1000 batches of steps 1-1000, then restoring the checkpoint's RNG states
[x INFO] Validation perplexity: 36.0
[x INFO] Validation accuracy: 31.0
[x INFO] Validation perplexity: 30.0
"""


def test_validation_log_counts_steps_from_each_attempts_checkpoint():
    # the first attempt validated at 500, 1000 and 1500 and was killed before saving 1500; the second
    # resumed from 1000 and validated 1500 again (kept) and 2000
    assert validation_log(LOG, 500) == {500: {"valid_ppl": 90.5, "valid_acc": 20.1}, 1000: {"valid_ppl": 40.0, "valid_acc": 30.0},
                                        1500: {"valid_ppl": 36.0, "valid_acc": 31.0}, 2000: {"valid_ppl": 30.0}}


def test_exact_resume_log_needs_every_resume_exact():
    assert exact_resume_log("Start training loop") is None
    assert exact_resume_log(LOG) is True
    stock = LOG.replace("then restoring the checkpoint's RNG states", "then continuing without the RNG states")
    assert exact_resume_log(stock) is False
    assert exact_resume_log(LOG + "Loading checkpoint from /w/m_step_1500.pt\n") is False  # one resume without the option


def test_a_job_may_grow_its_steps_but_not_change_otherwise(tmp_path, capsys):
    job = curve_jobs(seed=1, max_steps=40, every=10)[0]
    runner = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), [job], preset="demo", train_steps=40, gpu=False)
    jd = tmp_path / "jobs" / job.name
    jd.mkdir(parents=True)
    cfg = runner.job_config(job)
    assert cfg["train_steps"] == 40 and cfg["keep_checkpoint"] == -1 and cfg["valid_steps"] == 10
    (jd / "config.yaml").write_text(yaml.safe_dump({**cfg, "train_steps": 20}))
    (jd / "done.json").write_text("{}")
    assert runner._checked_config(job)["train_steps"] == 40
    assert not (jd / "done.json").exists()  # no longer finished: it resumes to 40 steps
    assert "extending from 20 to 40 steps, again from step 0 (none of its checkpoints is here)" in capsys.readouterr().out
    (jd / "model_step_10.pt").touch()
    (jd / "model_step_20.pt").touch()
    (jd / "done.json").write_text("{}")
    runner._checked_config(job)
    assert "extending from 20 to 40 steps, from its step-20 checkpoint" in capsys.readouterr().out
    (jd / "config.yaml").write_text(yaml.safe_dump({**cfg, "train_steps": 80}))
    with pytest.raises(XLInputError, match=r"train_steps \(80 there, 40 now: fewer steps\)"):
        runner._checked_config(job)
    (jd / "config.yaml").write_text(yaml.safe_dump({**cfg, "heads": 1}))
    with pytest.raises(XLInputError, match=rf"differs from what job {job.name} needs now in heads \(1 there, 8 now\)"):
        runner._checked_config(job)


def test_a_moved_work_directory_is_the_same_run(tmp_path):
    """A work directory moved or copied elsewhere (another machine, another folder) goes on: its jobs' recorded
    paths under the former directory are judged as the same files here; a changed model is still refused, named
    in this directory's paths, and a path outside the work directory is compared as it is."""
    job = curve_jobs(seed=1, max_steps=40, every=10)[0]
    runner = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), [job], preset="demo", train_steps=40, gpu=False)
    jd = tmp_path / "jobs" / job.name
    jd.mkdir(parents=True)
    cfg = runner.job_config(job)
    elsewhere = "/old/machine/run"
    text = yaml.safe_dump(cfg).replace(str(tmp_path), elsewhere)
    assert elsewhere + "/jobs/" in text and str(tmp_path) not in text
    (jd / "config.yaml").write_text(text)
    assert runner.config_problem(job) is None
    (jd / "config.yaml").write_text(yaml.safe_dump({**yaml.safe_load(text), "heads": 1}))
    with pytest.raises(XLInputError, match=r"needs now in heads \(1 there, 8 now\): use another"):
        runner._checked_config(job)
    moved = yaml.safe_load(text)
    moved["src_vocab"] = "/somewhere/else/vocab.src"  # not under the former directory: another file
    (jd / "config.yaml").write_text(yaml.safe_dump(moved))
    with pytest.raises(XLInputError, match=r"needs now in src_vocab \(/somewhere/else/vocab.src there, "):
        runner._checked_config(job)


def test_in_this_workdir_reads_the_former_directory_off_the_paths():
    from onmt_xl.experiments.jobs import in_this_workdir

    now = {"a": "/new/wd/data/train.src", "b": {"c": ["/new/wd/vocab.src", 3]}, "d": "/corpus/raw.txt", "e": "x"}
    old = {"a": "/old/wd/data/train.src", "b": {"c": ["/old/wd/vocab.src", 3]}, "d": "/corpus/raw.txt", "e": "x",
           "f": "/old/wd"}
    assert in_this_workdir(old, now, "/new/wd/") == {**now, "f": "/new/wd"}
    assert in_this_workdir(now, now, "/new/wd") == now  # not moved: unchanged
    # one path that only shares its end with this directory's does not outvote the work directory's
    old["g"], now["g"] = "/x/data/valid.src", "/new/wd/data/valid.src"
    old["h"], now["h"] = "/old/wd/data/test.src", "/new/wd/data/test.src"
    assert in_this_workdir(old, now, "/new/wd")["g"] == "/x/data/valid.src"


def test_parameters_count_what_trains_and_list_buffers_apart():
    from onmt_xl.experiments.analysis import build_model
    from onmt_xl.experiments.stock import count_parameters

    model = build_model("combination", vocab_size=50)
    counts = count_parameters(model)
    pe = sum(b.numel() for name, b in model.named_buffers() if name.endswith("pe"))
    assert pe > 0 and counts["buffers"] >= pe  # the stock sinusoid table is not a parameter
    assert counts["parameters"] == sum(p.numel() for p in model.parameters())
    model.encoder.embeddings.make_embedding.emb_luts[0].weight.requires_grad_(False)
    assert count_parameters(model)["parameters"] == counts["parameters"] - 50 * model.encoder.embeddings.word_vec_size


def test_main_jobs_reuse_the_curve_models_and_average_their_last_checkpoints(tmp_path):
    from onmt_xl.experiments.evidence import main_jobs, prune_checkpoints, started_first

    jobs = main_jobs(["baseline", "inxl", "combination"], [1, 2], steps=30, every=10, average=3,
                     curve_seed=1, curve_steps=50)
    by = {j.name: j for j in jobs}
    # the headline comparison (the curve systems) first with every seed, then the others seed by seed
    assert list(by) == ["baseline_s1", "combination_s1", "baseline_s2", "combination_s2", "inxl_s1", "inxl_s2"]
    assert by["baseline_s1"].train_steps == 50 and by["inxl_s1"].train_steps == 30  # the curve job trains longer
    assert all(j.final_step == 30 and j.average == 3 for j in jobs)
    assert by["baseline_s1"].variants == ["valid", "test"] and by["inxl_s1"].variants == ["valid", "test", "oracle"]
    curve = curve_jobs(seed=1, max_steps=50, every=10)[0]
    runner = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), jobs, preset="demo", train_steps=30, gpu=False)
    assert runner.job_config(by["baseline_s1"]) == runner.job_config(curve)  # the same model as the curve's

    jd = tmp_path / "jobs" / "inxl_s2"
    jd.mkdir(parents=True)
    calls = []
    runner._run = lambda args, log, commands, **kw: calls.append([str(a) for a in args]) or \
        (jd / "average3_step_30.pt.partial").write_text("avg")
    with pytest.raises(FileNotFoundError, match="model_step_10.pt"):
        runner.final_model(by["inxl_s2"])
    for step in (10, 20, 30):
        (jd / f"model_step_{step}.pt").write_text("")
    assert runner.final_model(by["inxl_s2"]) == jd / "average3_step_30.pt"
    assert calls[0][0].endswith("onmt_average_models") and calls[0][2:5] == [str(jd / f"model_step_{s}.pt") for s in (10, 20, 30)]
    for variant in ("valid", "test", "oracle"):
        (jd / f"hyp.{variant}").write_text("")
    prune_checkpoints(runner, by["inxl_s2"])
    assert sorted(p.name for p in jd.glob("*.pt")) == ["average3_step_30.pt", "model_step_30.pt"]
    # jobs trained part of the way resume before new ones start; a finished one keeps its place
    assert [j.name for j in started_first(runner, jobs)] == ["inxl_s2", "baseline_s1", "combination_s1",
                                                            "baseline_s2", "combination_s2", "inxl_s1"]
    (jd / "done.json").write_text("{}")
    assert started_first(runner, jobs) == jobs


def test_given_validation_pairs_need_no_held_out_training_pairs(tmp_path):
    corpus = _corpus(tmp_path)
    (tmp_path / "v.src").write_text("a\n")
    (tmp_path / "v.tgt").write_text("b\n")
    corpus.valid_src, corpus.valid_tgt = str(tmp_path / "v.src"), str(tmp_path / "v.tgt")
    runner = Runner(corpus, str(tmp_path / "wd"), [], preset="demo", train_steps=4, gpu=False, valid_size=1000)
    runner.stage_data()
    assert len((tmp_path / "wd" / "data" / "train.src").read_text().splitlines()) == 60


# -- the report: mean ± sd, seed-pooled bootstrap, Holm, novel test pairs, runs left out ---------------------


def _fake_study(wd, rng_seed=0):
    """A work directory as --stage main leaves it: refs, training targets, three seeds of two systems and one of a
    third, the better system's translations closer to the references; one run resumed other than exactly."""
    import json
    import random

    rng = random.Random(rng_seed)
    words = [f"w{k}" for k in range(40)]
    refs = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(60)]
    (wd / "data").mkdir(parents=True)
    (wd / "data" / "test.ref").write_text("\n".join(refs) + "\n")
    (wd / "data" / "valid.tgt").write_text("\n".join(refs[:20]) + "\n")
    (wd / "data" / "train.tgt").write_text("\n".join(refs[:15] + ["unrelated line"]) + "\n")  # 45 novel
    # the sources of test pairs 40-54 are training sources (one with other spacing): 15 seen, all of them novel
    sources = [f"src {k} x" for k in range(60)]
    (wd / "data" / "test.src").write_text("\n".join(sources) + "\n")
    (wd / "data" / "train.src").write_text("\n".join(["src  40 x"] + sources[41:55] + ["unrelated source"]) + "\n")
    (wd / "preorderer.json").write_text(json.dumps({"tau": 0.86, "oracle_tau": 0.997, "tune": {"tau": 0.85}}))
    (wd / "preorderer_10.json").write_text(json.dumps({"tau": 0.80, "tune": {"tau": 0.79}}))
    (wd / "jobs" / "baseline_s1").mkdir(parents=True)
    (wd / "jobs" / "baseline_s1" / "curve.jsonl").write_text("".join(
        json.dumps({"step": s, "bleu": b, **({"valid_ppl": 9.5} if s == 3000 else {})}) + "\n"
        for s, b in ((1000, 10.0), (2000, 20.0), (3000, 20.1), (4000, 20.2), (5000, 20.0))))
    (wd / "preorder_spread.jsonl").write_text("".join(json.dumps({"run": k, "tune_tau": t, "test_tau": t + 0.01}) + "\n"
                                                      for k, t in enumerate((0.85, 0.86, 0.87), 1)))

    def noisy(ref, keep):
        return " ".join(t if rng.random() < keep else rng.choice(words) for t in ref.split())

    for system, keep, seeds in (("baseline", 0.5, (1, 2, 3)), ("combination", 0.8, (1, 2, 3)),
                                ("inxl", 0.5, (1, 2, 3)), ("headxl", 0.9, (1,)), ("combination_pre10", 0.6, (1, 2)),
                                ("encoder_free", 0.2, (1, 2)), ("combination_oracle", 0.97, (1, 2)),
                                ("headxl_tau0", 0.5, (1,)), ("headxl_tau4", 0.88, (1,)),
                                ("combination_noise10", 0.75, (1,)), ("combination_noise20", 0.3, (1,)),
                                ("combination_rerun", 0.8, (1,))):
        for seed in seeds:
            jd = wd / "jobs" / f"{system}_s{seed}"
            jd.mkdir(parents=True, exist_ok=True)
            if system.startswith("combination") and "_pre" not in system and "_noise" not in system:
                (jd / "hyp.oracle").write_text("\n".join(noisy(r, 0.95 if system == "combination" else keep)
                                                         for r in refs) + "\n")
            if system != "combination_oracle":  # trained on oracle indices: translated with them only
                (jd / "hyp.test").write_text("\n".join(noisy(r, keep) for r in refs) + "\n")
                (jd / "hyp.valid").write_text("\n".join(noisy(r, keep) for r in refs[:20]) + "\n")
            done = {"parameters": 1000 + len(system), "buffers": 7,
                    "resumed_exactly": (system, seed) not in (("inxl", 3), ("combination_noise20", 1))}
            if system == "combination_rerun":  # trained on another CPU than the rest
                done.update(precision="bf16", cpu="AVX512-BF16 and AMX", dropout_mask="fast")
            (jd / "done.json").write_text(json.dumps(done))
    return refs


def test_report_statistics_and_verdicts(tmp_path):
    import sacrebleu

    from onmt_xl.experiments import stats
    from onmt_xl.experiments.evidence_markdown import markdown
    from onmt_xl.experiments.evidence_report import build_report, novel_indices, seen_source_indices

    refs = _fake_study(tmp_path)
    assert novel_indices(refs, refs[:15]) == [i for i, r in enumerate(refs) if r not in refs[:15]]
    assert seen_source_indices(["a b", "c  d", "e"], ["c d", "a", "x"]) == [1]
    rep = build_report(tmp_path, ["baseline", "combination", "inxl", "headxl"], [1, 2, 3], n_samples=200, seed=7,
                       preorder_pairs=[10])
    assert rep["left_out"] == ["combination_noise20_s1", "inxl_s3"] and rep["systems"]["inxl"]["seeds"] == [1, 2]
    assert rep["novel_sentences"] == len(novel_indices(refs, refs[:15])) and rep["test_sentences"] == 60
    assert rep["seen_source_sentences"] == 15  # test pairs 40-54 (_fake_study)
    base = rep["systems"]["baseline"]
    by_hand = [sacrebleu.corpus_bleu((tmp_path / "jobs" / f"baseline_s{s}" / "hyp.test").read_text().splitlines(),
                                     [refs]).score for s in (1, 2, 3)]
    assert base["test_bleu"]["values"] == pytest.approx(by_hand)
    assert base["test_bleu"]["mean"] == pytest.approx(sum(by_hand) / 3)
    assert base["params"] == 1008 and base["buffers"] == 7
    assert rep["systems"]["headxl"]["test_bleu"]["sd"] is None  # one seed
    comps = rep["comparisons"]
    assert set(comps) == {"combination", "inxl", "headxl"}
    assert {k: c["p_holm"] for k, c in comps.items()} == stats.holm({k: c["p"] for k, c in comps.items()})
    assert comps["combination"]["verdict"] == "helps" and comps["combination"]["low"] > 0
    assert comps["inxl"]["verdict"] == "no evidence either way" and comps["inxl"]["system_runs"] == 2
    again = build_report(tmp_path, ["baseline", "combination", "inxl", "headxl"], [1, 2, 3], n_samples=200, seed=7,
                         preorder_pairs=[10])
    assert again == rep  # the recorded seed reproduces every p-value
    md = markdown(rep)
    assert "| combination | 1,2,3 |" in md and "seed 7" in md and "Left out" in md and "inxl_s3" in md
    assert ("60 test pairs, of which 45 have a reference that is not a training target (novel) and 15 have a source "
            "that is a training source verbatim") in md
    verdict = "helps as " + " and ".join(n for k, n in (("inxl", "InXL"), ("headxl", "HeadXL"), ("combination", "Combination"))
                                         if comps[k]["verdict"] == "helps")
    assert f"XL PE {verdict}" in md and f"Combination {comps['combination']['delta']:+.2f} (95 % interval" in md
    comb = rep["systems"]["combination"]
    assert comb["oracle_bleu"]["mean"] > comb["test_bleu"]["mean"] and rep["systems"]["baseline"]["oracle_bleu"] is None
    quality = {q["preorderer"]: q for q in rep["preorder_quality"]}
    assert list(quality) == ["first 10 pairs", "all 16 pairs", "oracle (test-side links)"]
    assert quality["first 10 pairs"]["seeds"] == [1, 2] and quality["first 10 pairs"]["tune_tau"] == 0.79
    assert quality["all 16 pairs"]["test_bleu"] == comb["test_bleu"]
    assert quality["oracle (test-side links)"]["test_tau"] == 0.997
    assert quality["oracle (test-side links)"]["test_bleu"] == comb["oracle_bleu"]
    assert "| first 10 pairs | 0.7900 | 0.8000 | 1,2 |" in md
    # what a better preorderer buys: each row against the all-pairs preorderer's Combination
    assert all("hyps" not in q for q in quality.values()) and "vs_all" not in quality["all 16 pairs"]
    small, oracle = quality["first 10 pairs"]["vs_all"], quality["oracle (test-side links)"]["vs_all"]
    assert small["delta"] == pytest.approx(quality["first 10 pairs"]["test_bleu"]["mean"] - comb["test_bleu"]["mean"])
    assert small["delta"] < 0 and small["high"] < 0 and oracle["delta"] > 0 and oracle["low"] > 0
    assert small["delta_tau"] == pytest.approx(0.80 - 0.86)
    assert small["bleu_per_0_01_tau"] == pytest.approx(small["delta"] / (0.80 - 0.86) / 100)
    assert {small["p_holm"], oracle["p_holm"]} == set(stats.holm({"a": small["p"], "b": oracle["p"]}).values())
    assert f"| {small['delta']:+.2f} [{small['low']:+.2f}, {small['high']:+.2f}] | {small['p_holm']:.3f} | " \
           f"{small['bleu_per_0_01_tau']:+.2f} |" in md
    assert rep["preorder_spread"]["test_tau"]["mean"] == pytest.approx(0.87)
    assert rep["plateau_step"] == 2000 and "| 3,000 | 20.10 / 9.50 |" in md and "**2,000**" in md
    assert "tau over 3 eflomal runs" in md and "tune 0.8600 ± 0.0100; test 0.8700 ± 0.0100" in md


def test_report_families_oracle_rows_and_sweeps(tmp_path):
    import shutil

    from onmt_xl.experiments import stats
    from onmt_xl.experiments.evidence import report_families, report_sweeps
    from onmt_xl.experiments.evidence_markdown import markdown
    from onmt_xl.experiments.evidence_report import build_report

    _fake_study(tmp_path)
    systems = ["baseline", "combination", "inxl", "headxl", "encoder_free"]
    families = report_families(systems)
    assert families == [("XL PE and Relative PE", ["inxl", "headxl", "combination"]),
                        ("the other baselines", ["encoder_free"])]
    sweeps = report_sweeps("enja", 1)
    assert [name for _, name in sweeps[0].points] == ["headxl_tau0_s1", "headxl_tau1_s1", "headxl_s1",
                                                      "headxl_tau3_s1", "headxl_tau4_s1"]
    rep = build_report(tmp_path, systems, [1, 2, 3], n_samples=200, seed=7, families=families,
                       oracle_systems=["combination", "prereorder"], sweeps=sweeps,
                       orderings=[("combination", "inxl"), ("both_re", "enc_re")])
    # every declared ordering is recorded (papers reads its sides from here), measured or not
    assert rep["orderings"] == [["combination", "inxl"], ["both_re", "enc_re"]] and list(rep["pairs"]) == [
        "combination > inxl"]
    comps = rep["comparisons"]
    xl = {k: c["p"] for k, c in comps.items() if c["family"] == "XL PE and Relative PE"}
    assert set(xl) == {"inxl", "headxl", "combination"}
    assert {k: comps[k]["p_holm"] for k in xl} == stats.holm(xl)  # corrected within its own family
    assert comps["encoder_free"]["p_holm"] == comps["encoder_free"]["p"] and comps["encoder_free"]["verdict"] == "hurts"
    # trained and tested on oracle indices, against the same system on predicted indices
    (oracle,) = rep["oracle_rows"]
    assert oracle["system"] == "combination" and oracle["seeds"] == [1, 2]
    assert oracle["predicted"] == rep["systems"]["combination"]["test_bleu"]
    assert oracle["oracle_at_test"] == rep["systems"]["combination"]["oracle_bleu"]
    assert oracle["vs_predicted"]["delta"] == pytest.approx(oracle["oracle_trained"]["mean"] - oracle["predicted"]["mean"])
    assert oracle["vs_predicted"]["low"] > 0 and oracle["vs_predicted"]["verdict"] == "helps"
    tau, noise, rerun = rep["sweeps"]
    assert [(p["setting"], p["default"]) for p in tau["points"]] == [("0", False), ("2", True), ("4", False)]
    assert (tau["default_job"], noise["default_job"]) == ("headxl_s1", "combination_s1")
    assert tau["points"][0]["vs_default"]["delta"] < 0 and "vs_default" not in tau["points"][1]
    assert {p["job"]: p["vs_default"]["p_holm"] for p in tau["points"] if "vs_default" in p} == stats.holm(
        {p["job"]: p["vs_default"]["p"] for p in tau["points"] if "vs_default" in p})
    assert [p["setting"] for p in noise["points"]] == ["0 %", "10 %"]  # the 20 % run was resumed otherwise
    # the clean run trained again, against itself as archived: a sweep of its own, not a point of the noise attack
    assert [(p["setting"], p["job"], p["default"]) for p in rerun["points"]] == [
        ("as archived", "combination_s1", True), ("trained again", "combination_rerun_s1", False)]
    assert rerun["points"][1]["vs_default"]["p_holm"] == rerun["points"][1]["vs_default"]["p"]  # one comparison
    md = markdown(rep)
    assert "Against baseline, XL PE and Relative PE" in md and "Holm over these 3 comparisons" in md
    assert "Against baseline, the other baselines" in md and "seed 7; one comparison; α = 0.05" in md
    assert "Sanity check (Ding et al. 2020, Tab. 4: the full Transformer beats the encoder-free one): holds" in md
    enc, base = rep["systems"]["encoder_free"], rep["systems"]["baseline"]
    assert (f"Untested, for comparison: novel-reference test BLEU {enc['novel_bleu']['mean']:.2f} ± "
            f"{enc['novel_bleu']['sd']:.2f} against {base['novel_bleu']['mean']:.2f} ± {base['novel_bleu']['sd']:.2f}; "
            f"validation BLEU {enc['valid_bleu']['mean']:.2f} ± ") in md
    assert "| combination | 1,2 | " in md and "oracle in training and test" in md
    # a system left out of the report (a secondary before all its runs finished) is left out of the orderings too,
    # though its jobs are there; the declared orderings stay whole, so papers reads the family as partial
    without = build_report(tmp_path, ["baseline", "combination", "headxl"], [1, 2, 3], n_samples=200, seed=7,
                           families=[("f", ["combination"])], orderings=[("combination", "inxl"),
                                                                         ("combination", "headxl")])
    assert list(without["pairs"]) == ["combination > headxl"] and "inxl" not in without["systems"]
    assert without["orderings"] == [["combination", "inxl"], ["combination", "headxl"]]
    t0 = tau["points"][0]
    assert (f"| 0 | headxl_tau0_s1 | {t0['valid_bleu']:.2f} | {t0['test_bleu']:.2f} | "
            f"{t0['vs_default']['delta']:+.2f} [") in md
    assert "| 2 | headxl_s1 |" in md and "(default) | – |" in md and "Noise attack" in md
    assert "The same run trained again (not a paper's figure)" in md
    assert "| trained again | combination_rerun_s1 |" in md
    assert rerun["points"][1]["training"] == "bf16 (AVX512-BF16 and AMX); fast masks"
    assert [line.rsplit("|", 2)[1].strip() for line in md.splitlines() if "| combination_rerun_s1 |" in line
            or line.startswith("| as archived |")] == ["?", "bf16 (AVX512-BF16 and AMX); fast masks"]
    assert "combination_noise20_s1" in md.split("Left out")[1]
    for name in ("headxl_tau0_s1", "headxl_tau4_s1", "combination_noise10_s1"):  # a sweep of its default alone
        shutil.rmtree(tmp_path / "jobs" / name)
    md = markdown(build_report(tmp_path, systems, [1, 2, 3], n_samples=20, families=families, sweeps=sweeps))
    assert "τ sweep" not in md and "Noise attack" not in md


def test_report_stage_writes_markdown_and_json(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import run_env

    _fake_study(tmp_path / "wd")
    out = tmp_path / "rep" / "EVIDENCE.md"
    proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "evidence", "--stage", "report", "--workdir",
                           str(tmp_path / "wd"), "--report", str(out), "--samples", "50", "--systems",
                           "baseline,combination"], capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.with_suffix(".json").read_text())["bootstrap"] == {"samples": 50, "seed": 12345}
    assert out.read_text() in proc.stdout
    # without --families the default families span every tier: nothing is declared beyond what is reported
    rep_json = json.loads(out.with_suffix(".json").read_text())
    assert rep_json["families_declared"] == rep_json["family_members"] and "declared with" not in out.read_text()
    plot = out.with_name("EVIDENCE_curve.png")  # the learning curve beside the report, named in it
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "plotted in `EVIDENCE_curve.png`" in out.read_text()
    # without --systems: every tier's finished systems, each family apart, the oracle rows and the sweeps
    proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "evidence", "--stage", "report", "--workdir",
                           str(tmp_path / "wd"), "--report", str(out), "--samples", "50"],
                          capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.with_suffix(".json").read_text())
    assert list(report["systems"]) == ["baseline", "inxl", "headxl", "combination", "encoder_free"]
    assert list(report["family_members"]) == ["XL PE and Relative PE", "the other baselines", "Tab. 4: encoder-free variants and the LSTM"]
    # members of the default families without runs here (not run in this study) are not announced as coming
    assert "disan" in report["family_members"]["the other baselines"] and "declared with" not in out.read_text()
    assert [r["system"] for r in report["oracle_rows"]] == ["combination"]
    assert [[p["job"] for p in sw["points"]] for sw in report["sweeps"]] == [
        ["headxl_tau0_s1", "headxl_s1", "headxl_tau4_s1"], ["combination_s1", "combination_noise10_s1"],
        ["combination_s1", "combination_rerun_s1"]]
    proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "evidence", "--stage", "report", "--workdir",
                           str(tmp_path / "nowhere")], capture_output=True, text=True, env=run_env())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "nowhere" in proc.stderr



def test_a_family_is_recorded_as_declared_and_corrected_over_its_reported_members(tmp_path):
    """A declared member whose runs the report leaves out (``--systems`` without it) stays in ``families_declared``
    and is named beside the family's table; Holm runs over the members reported."""
    import subprocess
    import sys

    from tests.conftest import run_env

    _fake_study(tmp_path / "wd")
    out = tmp_path / "DECISIVE.md"
    proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "evidence", "--stage", "report", "--workdir",
                           str(tmp_path / "wd"), "--report", str(out), "--samples", "50", "--systems",
                           "baseline,combination,headxl", "--families", "primary=combination;secondary=headxl,inxl"],
                          capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["family_members"] == {"primary": ["combination"], "secondary": ["headxl"]}
    assert report["families_declared"] == {"primary": ["combination"], "secondary": ["headxl", "inxl"]}
    assert report["comparisons"]["headxl"]["p_holm"] == report["comparisons"]["headxl"]["p"]
    text = out.read_text()
    assert "declared with inxl too, whose runs are not in this report" in text
    assert text.count("declared with") == 1  # the primary family is whole

def test_preorderer_quality_jobs_train_on_their_own_preorderer(tmp_path):
    """--preorder-pairs: Combination again with a preorderer trained on the first N training pairs, scored on the
    tuning split; training and translation use that file."""
    from onmt_xl.experiments.evidence import main_jobs

    jobs = main_jobs(["baseline"], [1], steps=30, every=10, average=1, curve_seed=1, curve_steps=50,
                     preorder_pairs=[20], preorder_seeds=[1, 2])
    pre = [j for j in jobs if j.preorder_pairs]
    assert [j.name for j in pre] == ["combination_pre20_s1", "combination_pre20_s2"]
    runner = Runner(_corpus(tmp_path), str(tmp_path / "wd"), jobs, preset="demo", train_steps=30, gpu=False,
                    valid_size=10, tune_size=8, preorder_iterations=1)
    runner.stage_data()
    (tmp_path / "wd" / "align").mkdir()
    for split, n in (("train", 42), ("tune", 8), ("test", 5)):
        (tmp_path / "wd" / "align" / f"{split}.gdfa").write_text("0-0 1-1\n" * n)
    runner.preorder(20)
    model = tmp_path / "wd" / "preorderer_20.xlp"
    scores = json.loads((tmp_path / "wd" / "preorderer_20.json").read_text())
    assert model.exists() and scores["tune"]["sentences"] == 8 and scores["sentences"] == 5
    assert runner.job_config(pre[0])["xl_preorderer"] == str(model)
    assert runner.job_config(by_name(jobs, "baseline_s1")).get("xl_preorderer") is None
    args = [str(a) for a in runner._translate_args(pre[0], "test", tmp_path / "out")]
    assert args[args.index("-xl_preorderer") + 1] == str(model)
    with pytest.raises(XLUsageError, match="the training split has 42"):
        runner.preorder(99)


def by_name(jobs, name):
    return next(j for j in jobs if j.name == name)


def test_plateau_step_rule():
    from onmt_xl.experiments.evidence import plateau_step

    def curve(points):
        return [{"step": s, "bleu": b} for s, b in points]

    rising = curve([(1000, 10), (2000, 20), (3000, 25), (4000, 27), (5000, 27.3), (6000, 27.4), (7000, 27.2)])
    assert plateau_step({"a": rising}, tolerance=0.5, window=2000) == 4000
    assert plateau_step({"a": rising}, tolerance=0.5, window=4000) is None  # not seen far enough past 4000
    slower = curve([(1000, 5), (2000, 12), (3000, 20), (4000, 24), (5000, 26), (6000, 26.2), (7000, 26.3)])
    assert plateau_step({"a": rising, "b": slower}, tolerance=0.5, window=1000) == 5000  # both must have levelled
    assert plateau_step({"a": rising[:3]}) is None and plateau_step({}) is None


def test_a_preorderer_trained_with_other_options_is_not_reused_silently(tmp_path):
    runner = Runner(_corpus(tmp_path), str(tmp_path / "wd"), [], preset="demo", train_steps=4, gpu=False,
                    valid_size=10, tune_size=8, preorder_iterations=1)
    runner.stage_data()
    (tmp_path / "wd" / "align").mkdir()
    for split, n in (("train", 42), ("tune", 8), ("test", 5)):
        (tmp_path / "wd" / "align" / f"{split}.gdfa").write_text("0-0 1-1\n" * n)
    runner.preorder()
    assert "options" not in json.loads((tmp_path / "wd" / "preorderer.json").read_text())
    runner.preorder()  # the same options: kept
    runner.preorder_options = {"tiebreak_null": "none"}
    with pytest.raises(XLUsageError, match=r'preorderer.xlp: was trained with options \{\}, this run asks for '
                                           r'\{"tiebreak_null": "none"\}'):
        runner.preorder()


def test_tiers_c_and_d_jobs(tmp_path):
    from onmt_xl.experiments.evidence import ORACLE_SYSTEMS, TIERS, main_jobs, tier_main_jobs

    systems, seeds = TIERS["c"]
    jobs = main_jobs(systems, seeds, steps=30, every=10, average=2, curve_seed=1, curve_steps=50,
                     oracle_systems=ORACLE_SYSTEMS)
    by = {j.name: j for j in jobs}
    assert {f"{s}_s{k}" for s in systems for k in seeds} < set(by)
    oracle = by["prereorder_oracle_s2"]
    assert oracle.xl_train == "align" and oracle.variants == ["oracle"] and oracle.train_steps == 30
    runner = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), jobs, preset="enja", train_steps=30, gpu=False)
    assert runner.job_config(by["combination_oracle_s1"])["xl_source"] == "align"
    d = tier_main_jobs("d", *TIERS["d"], steps=30, every=10, average=2, curve_seed=1, curve_steps=50)
    assert [j.name for j in d] == ["headxl_tau0_s1", "headxl_tau1_s1", "headxl_tau3_s1", "headxl_tau4_s1",
                                   "combination_rerun_s1", "combination_noise5_s1", "combination_noise10_s1",
                                   "combination_noise15_s1", "combination_noise20_s1"]
    by = {j.name: j for j in d + main_jobs(["combination"], [1], steps=30, every=10, average=2, curve_seed=1,
                                           curve_steps=50)}
    assert runner.job_config(by["headxl_tau4_s1"])["xl_heads"] == 4
    assert runner.job_config(by["combination_noise20_s1"])["xl_noise"] == 0.2
    assert runner.job_config(by["headxl_tau0_s1"])["heads"] == 4  # the sweep covers every head count of the preset
    # the clean run trained again: the clean run's configuration but for its own paths and the curve's longer run
    clean, rerun = runner.job_config(by["combination_s1"]), runner.job_config(by["combination_rerun_s1"])
    differ = {k for k in clean.keys() | rerun.keys() if clean.get(k) != rerun.get(k)}
    assert differ == {"save_model", "save_data", "train_steps"}, differ
    assert (clean["train_steps"], rerun["train_steps"]) == (50, 30) and "xl_noise" not in rerun


def test_prepare_trains_the_extra_preorderers(tmp_path, monkeypatch):
    """--stage prepare --preorder-pairs N: the preorderer on the first N pairs is trained and scored with the
    study's own, before any job asks for it."""
    runner = Runner(_corpus(tmp_path), str(tmp_path / "wd"), [], preset="demo", train_steps=4, gpu=False,
                    valid_size=10, tune_size=8, preorder_iterations=1)
    runner.extra_preorder_pairs = [20]
    (tmp_path / "wd" / "align").mkdir(parents=True)
    for split, n in (("train", 42), ("tune", 8), ("test", 5)):
        (tmp_path / "wd" / "align" / f"{split}.gdfa").write_text("0-0 1-1\n" * n)
    monkeypatch.setattr(runner, "align", lambda: None)
    monkeypatch.setattr(runner, "vocab", lambda: None)
    runner.prepare()
    for name in ("preorderer", "preorderer_20"):
        assert json.loads((tmp_path / "wd" / f"{name}.json").read_text())["tune"]["sentences"] == 8
    assert not list((tmp_path / "wd").glob("preorderer_4*"))


def test_a_jobs_cpu_precision_override_reaches_its_config(tmp_path):
    """The runner sets -xl_cpu_precision auto, unless the job asks for fp32 or bf16 (tools/study/tune_options.py's
    baseline_fp32 / baseline_bf16 compare the two)."""
    from onmt_xl.experiments.plan import Job

    jobs = [Job("a", "baseline", 1), Job("b", "baseline", 1, overrides={"xl_cpu_precision": "fp32"}),
            Job("c", "baseline", 1, overrides={"xl_cpu_precision": "bf16"}),
            Job("d", "baseline", 1, overrides={"cpu_precision": "fp32"})]  # the legacy name
    runner = Runner(_corpus(tmp_path), str(tmp_path / "wd"), jobs, preset="demo", train_steps=4, gpu=False)
    cfgs = [runner.job_config(j) for j in jobs]
    assert [cfg["xl_cpu_precision"] for cfg in cfgs] == ["auto", "fp32", "bf16", "fp32"]
    assert not any("cpu_precision" in cfg for cfg in cfgs)


def test_training_precision_is_recorded_per_attempt():
    from onmt_xl.experiments.jobs import resolved_precision

    bf16 = "[I] -cpu_precision auto: bf16 autocast on this CPU (AVX512 with AVX512-BF16)\n[I] Starting training on CPU\nStep 50\n"
    fp32 = "[I] -cpu_precision auto: fp32 (this CPU: AVX2, without AVX512-BF16, AMX or Arm BF16)\n[I] Starting training on CPU\nStep 100\n"
    assert resolved_precision(bf16) == "bf16" and resolved_precision(fp32) == "fp32"
    assert resolved_precision(bf16 + bf16) == "bf16"
    assert resolved_precision(bf16 + fp32) == "bf16, then fp32"
    assert resolved_precision("[I] Starting training on CPU\n") == "fp32"  # -cpu_precision fp32 logs no line
    assert resolved_precision("") == "fp32"
    # logs since the xl_ prefix name -xl_cpu_precision; archived ones (above) -cpu_precision; an attempt of each
    new = bf16.replace("-cpu_precision", "-xl_cpu_precision")
    assert resolved_precision(new) == "bf16" and resolved_precision(fp32 + new) == "fp32, then bf16"
    legacy_note = "onmt_xl: legacy name (option) read as the new one: -cpu_precision -> -xl_cpu_precision; please use the new name\n"
    assert resolved_precision(new.replace("Starting", legacy_note + "Starting")) == "bf16"  # the note says nothing of it


def test_training_cpu_is_recorded_per_attempt(tmp_path):
    from onmt_xl.experiments.evidence_report import _kernels, read_run
    from onmt_xl.experiments.jobs import resolved_cpu

    epyc = "[I] -cpu_precision auto: bf16 autocast on this CPU (AVX512 with AVX512-BF16)\n[I] Starting training on CPU\n"
    amx = epyc.replace("-cpu_precision", "-xl_cpu_precision").replace("AVX512-BF16)", "AVX512-BF16 and AMX)")
    avx2 = "[I] -cpu_precision auto: fp32 (this CPU: AVX2, without AVX512-BF16, AMX or Arm BF16)\n[I] Starting training on CPU\n"
    refused = ("[I] -xl_cpu_precision bf16 is off: this CPU (AVX2, without AVX512-BF16, AMX or Arm BF16) has no native "
               "bf16 arithmetic, where bf16 runs many times slower than fp32; running in fp32\n[I] Starting training on CPU\n")
    assert [resolved_cpu(t) for t in (epyc, amx, avx2, refused)] == ["AVX512-BF16", "AVX512-BF16 and AMX", "AVX2", "AVX2"]
    assert resolved_cpu(epyc + epyc + amx) == "AVX512-BF16, then AVX512-BF16 and AMX"
    assert resolved_cpu("[I] Starting training on CPU\n") == "?"  # fp32 asked for: no line
    assert resolved_cpu(epyc.replace(" (AVX512 with AVX512-BF16)", "")) == "?"  # the oldest logs name no evidence
    assert _kernels({"precision": "bf16", "cpu": "AVX512-BF16 and AMX", "dropout_mask": "fast"}) == \
        "bf16 (AVX512-BF16 and AMX); fast masks"
    assert _kernels({"precision": "fp32", "cpu": "?"}) == "fp32"
    assert _kernels({"precision": "fp32", "cpu": "AVX2", "device": "NVIDIA H200"}) == "fp32 on NVIDIA H200"
    # an archived run's done.json predates the record: read from its training log; a recorded one is kept
    jd = tmp_path / "jobs" / "baseline_s1"
    jd.mkdir(parents=True)
    for split in ("valid", "test"):
        (jd / f"hyp.{split}").write_text("a\n")
    (jd / "train.log").write_text(amx)
    (jd / "done.json").write_text(json.dumps({"precision": "bf16"}))
    assert read_run(jd, "baseline", 1).info["cpu"] == "AVX512-BF16 and AMX"
    (jd / "done.json").write_text(json.dumps({"precision": "bf16", "cpu": "AVX2"}))
    assert read_run(jd, "baseline", 1).info["cpu"] == "AVX2"
    (jd / "done.json").write_text(json.dumps({"precision": "fp32", "device": "NVIDIA H200"}))
    assert "cpu" not in read_run(jd, "baseline", 1).info


def test_exact_resume_log_reads_old_and_new_names():
    new = LOG.replace("-exact_resume:", "-xl_exact_resume:")
    assert "-xl_exact_resume: skipping" in new and exact_resume_log(new) is True
    assert exact_resume_log(new.replace("then restoring the checkpoint's RNG states",
                                        "then continuing without the RNG states")) is False


def test_dropout_masks_are_recorded_per_attempt():
    from onmt_xl.experiments.evidence_report import _kernels
    from onmt_xl.experiments.jobs import resolved_dropout_mask

    old = "[I] -cpu_precision auto: bf16 autocast on this CPU\n[I] Starting training on CPU\nStep 50\n"
    fast = ("[I] -cpu_dropout_mask fast: dropout masks from four 15-bit draws per 64-bit random integer\n"
            "[I] Starting training on CPU\nStep 100\n")
    stock = "[I] -cpu_dropout_mask stock: dropout masks from PyTorch's bernoulli_\n[I] Starting training on CPU\n"
    assert resolved_dropout_mask(fast) == "fast" and resolved_dropout_mask(stock) == "stock"
    assert resolved_dropout_mask(old + fast + fast) == "stock, then fast"
    assert _kernels({"precision": "bf16", "dropout_mask": "stock, then fast"}) == "bf16; stock, then fast masks"
    assert _kernels({"precision": "fp32"}) == "fp32"  # a run recorded before the option
    assert _kernels({"precision": "fp32", "dropout_mask": "stock", "device": "NVIDIA H200"}) == \
        "fp32 on NVIDIA H200; stock masks"  # tools/study/gpu_evidence.sh's runs
    assert _kernels({"precision": "bf16", "device": "cpu"}) == "bf16"


def _staged(tmp_path):
    """A corpus directory (``_corpus``) and a work directory with its splits staged: 42 train, 10 valid, 8
    tuning, 5 test pairs; with the ``onmt-xl evidence`` arguments that name the same corpus and splits."""
    data = tmp_path / "corpus"
    data.mkdir()
    _corpus(data)
    wd = tmp_path / "wd"
    Runner(Corpus(*(str(data / f) for f in ("train.src", "train.tgt", "test.src", "test.tgt"))), str(wd), [],
           preset="demo", train_steps=4, gpu=False, valid_size=10, tune_size=8).stage_data()
    args = ["--data", str(data), "--src", "src", "--tgt", "tgt", "--train", "train", "--test", "test",
            "--valid-size", "10", "--tune-size", "8", "--gold-text", "", "--gold-align", ""]
    return wd, args


def test_report_from_the_archive_in_a_fresh_work_directory_is_the_same(tmp_path):
    """--archive: a machine that lost the work directory regenerates the report from the archive and the corpus
    (the splits staged again, the finished jobs restored), word for word."""
    import subprocess
    import sys

    from tests.conftest import run_env
    from tests.helpers import archive_noisy_runs

    wd, corpus_args = _staged(tmp_path)
    archive = tmp_path / "archive"
    archive_noisy_runs(wd, archive, ("baseline", "combination"))
    common = ["--stage", "report", *corpus_args, "--samples", "50", "--systems", "baseline,combination",
              "--seeds", "1,2"]
    reports = []
    for k, (workdir, extra) in enumerate(((wd, []), (tmp_path / "elsewhere" / "wd", ["--archive", str(archive)]))):
        out = tmp_path / f"report{k}.md"
        proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "evidence", "--workdir", str(workdir),
                               "--report", str(out), *common, *extra], capture_output=True, text=True, env=run_env())
        assert proc.returncode == 0, proc.stderr
        reports.append(out.read_text())
    assert "| combination | 1,2 |" in reports[0] and reports[1] == reports[0]


def test_curve_score_keeps_the_scored_points_in_the_archive(tmp_path):
    """--stage curve-score --archive: the points scored so far go to the archive at once (a restart loses the
    unfinished curve jobs' checkpoints, not their points)."""
    import subprocess
    import sys

    from tests.conftest import run_env

    wd, corpus_args = _staged(tmp_path)
    archive = tmp_path / "archive"
    points = "".join(json.dumps({"step": s, "bleu": b}) + "\n" for s, b in ((10, 1.0), (20, 2.0)))
    for name in ("baseline_s1", "combination_s1"):
        (wd / "jobs" / name).mkdir(parents=True)
        (wd / "jobs" / name / "curve.jsonl").write_text(points)
    proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "evidence", "--stage", "curve-score",
                           "--workdir", str(wd), *corpus_args, "--preset", "demo", "--max-steps", "40", "--every", "10",
                           "--archive", str(archive)],
                          capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr
    for name in ("baseline_s1", "combination_s1"):
        assert (archive / "jobs" / name / "curve.jsonl").read_text() == points
    assert "not reached yet" in proc.stderr + proc.stdout


def test_several_tiers_in_one_call_are_each_tiers_jobs_in_order_each_once():
    """--tier a,c,d: tier a's jobs (its preorderer-quality runs included), then c's, then d's, as the three calls
    would run them, each job once; a misspelt tier is a usage error that names it."""
    import argparse

    import pytest

    from onmt_xl.experiments.evidence import add_evidence, tier_jobs

    parser = argparse.ArgumentParser()
    add_evidence(parser.add_subparsers(dest="command"))

    def names(tier, *extra):
        args = parser.parse_args(["evidence", "--stage", "main", "--steps", "30", "--tier", tier, "--workdir", "w",
                                  "--preorder-pairs", "100", "--preorder-seeds", "1", *extra])
        return [j.name for j in tier_jobs(args)]

    a, c, d = names("a"), names("c"), names("d")
    pre = ["combination_pre100_s1"]
    assert a[-1:] == c[-1:] == d[-1:] == pre and "headxl_tau0_s1" in d
    # tier c: the sanity check's pair (encoder-free) first, then the other baselines seed by seed
    assert c[:4] == ["encoder_free_s1", "encoder_free_s2", "disan_s1", "enc_re_s1"]
    both = names("a,c,d")
    assert both == a + [n for n in c if n not in pre] + [n for n in d if n not in pre + c]
    assert len(both) == len(set(both)) and names("a, c,a,d") == both
    assert names("a,c", "--only", "headxl_s2,encoder_free_s1") == ["headxl_s2", "encoder_free_s1"]
    for bad in ("a,z", "", "ac"):
        with pytest.raises(SystemExit):
            parser.parse_args(["evidence", "--tier", bad])


def test_the_queue_script_runs_every_tier_in_order_with_valid_options(tmp_path):
    """tools/study/evidence_queue.sh: each tier's command, in the study's order, parses as `onmt-xl evidence` options;
    consecutive ja→en tiers train in one call (no idle job slot at a tier's end), `status` lists tier by tier."""
    import argparse
    import os
    import subprocess

    from onmt_xl.experiments.evidence import add_evidence
    from tests.conftest import REPO

    shim = tmp_path / "bin"
    shim.mkdir()
    calls = tmp_path / "calls"
    (shim / "python3").write_text(f'#!/bin/sh\nprintf "%s\\0" "$@" >> {calls}\nprintf "\\n" >> {calls}\n')
    (shim / "python3").chmod(0o755)
    env = dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}", S="7000", P="3")
    env.pop("TIERS", None)
    parser = argparse.ArgumentParser()
    add_evidence(parser.add_subparsers(dest="command"))
    # by default tiers a and b only: c, d and h train on the decisive split (reports/PREREG_decisive_baselines.md)
    proc = subprocess.run(["bash", str(REPO / "tools" / "study" / "evidence_queue.sh")], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    default = [parser.parse_args(line.split("\0")[2:-1]).tier for line in calls.read_text().splitlines()]
    assert default == ["a", "b"]
    calls.unlink()
    env["TIERS"] = "a b c d"
    proc = subprocess.run(["bash", str(REPO / "tools" / "study" / "evidence_queue.sh")], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    runs = [line.split("\0")[:-1] for line in calls.read_text().splitlines()]
    assert [r[:2] for r in runs] == [["-m", "onmt_xl.experiments"]] * 3
    parsed = [parser.parse_args(r[2:]) for r in runs]
    assert [(a.tier, a.stage, a.steps, a.parallel) for a in parsed] == [(t, "main", 7000, 3) for t in ("a", "b", "c,d")]
    assert [a.workdir for a in parsed] == ["runs/evidence_jaen", "runs/evidence_enja", "runs/evidence_jaen"]
    assert parsed[0].preorder_pairs == "10000,25000" and parsed[1].src == "en" and parsed[1].max_steps == 7000
    assert not parsed[2].preorder_pairs
    assert all(a.archive == f"reports/{os.path.basename(a.workdir)}" for a in parsed)
    calls.unlink()  # tier (b) done: a, c and d in one call, with tier a's preorderer-quality runs
    proc = subprocess.run(["bash", str(REPO / "tools" / "study" / "evidence_queue.sh")], capture_output=True, text=True,
                          env=dict(env, TIERS="a c d"))
    assert proc.returncode == 0, proc.stderr
    (one,) = [parser.parse_args(line.split("\0")[2:-1]) for line in calls.read_text().splitlines()]
    assert (one.tier, one.workdir, one.preorder_pairs) == ("a,c,d", "runs/evidence_jaen", "10000,25000")
    calls.unlink()
    bad = subprocess.run(["bash", str(REPO / "tools" / "study" / "evidence_queue.sh")], capture_output=True, text=True,
                         env=dict(env, TIERS="a z"))
    assert bad.returncode == 2 and "unknown tier 'z'" in bad.stderr and not calls.exists()  # checked before any run
    # `status`: the same options, each job's state instead of its training, one table per tier
    proc = subprocess.run(["bash", str(REPO / "tools" / "study" / "evidence_queue.sh"), "status"], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    status = [parser.parse_args(line.split("\0")[2:-1]) for line in calls.read_text().splitlines()]
    workdirs = [parsed[0].workdir, parsed[1].workdir, parsed[2].workdir, parsed[2].workdir]
    assert [(a.tier, a.stage, a.steps, a.workdir) for a in status] == [(t, "status", 7000, w) for t, w in zip("abcd", workdirs)]
    assert [bool(a.preorder_pairs) for a in status] == [True, False, False, False]
    assert [a.speed_from for a in status] == [None, "runs/evidence_jaen", None, None]  # b plans with ja→en's speed
    bad = subprocess.run(["bash", str(REPO / "tools" / "study" / "evidence_queue.sh"), "stat"], capture_output=True, text=True,
                         env=env)
    assert bad.returncode == 2 and "unknown argument 'stat'" in bad.stderr


def test_the_gpu_script_merges_a_waves_jobs_once_and_never_over_training_here(tmp_path):
    """tools/study/gpu_evidence.sh merge: the jobs a device run brought back go into the archive and the work directory
    (as --archive restores them); a job the archive already has, or one with checkpoints here, is left out, named."""
    import gzip
    import os
    import subprocess
    import tarfile

    from tests.conftest import REPO, run_env

    wave = tmp_path / "wave"
    for name in ("baseline_s2", "combination_s2"):
        (wave / name).mkdir(parents=True)
        (wave / name / "done.json").write_text(json.dumps({"system": name.split("_")[0], "device": "NVIDIA H200"}))
        (wave / name / "hyp.test.gz").write_bytes(gzip.compress(b"a hypothesis\n"))
    tgz = tmp_path / "jobs_w.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for name in ("baseline_s2", "combination_s2"):
            tar.add(wave / name, arcname=name)
    checkout = tmp_path / "checkout"  # the script runs in its checkout: W is runs/w there, from the file's name
    (checkout / "tools" / "study").mkdir(parents=True)
    (checkout / "tools" / "study" / "gpu_evidence.sh").write_text((REPO / "tools" / "study" / "gpu_evidence.sh").read_text())
    wd, archive = checkout / "runs" / "w", checkout / "reports" / "w"
    (wd / "jobs" / "combination_s2").mkdir(parents=True)
    (wd / "jobs" / "combination_s2" / "model_step_500.pt").write_text("")
    script = str(checkout / "tools" / "study" / "gpu_evidence.sh")
    env = run_env()

    def merge(*args):
        return subprocess.run(["bash", script, *args], capture_output=True, text=True, env=env)

    proc = merge("merge", str(tgz))  # combination_s2 is in training here: it stays out, baseline_s2 goes in
    assert proc.returncode == 0, proc.stderr
    assert "runs/w has no splits, which its report reads: merge with FROM=" in proc.stderr
    assert "combination_s2 left out: " in proc.stderr and "has checkpoints here" in proc.stderr
    assert "restored into" in proc.stdout and proc.stdout.rstrip().endswith(": baseline_s2")
    assert (wd / "jobs" / "baseline_s2" / "hyp.test").read_text() == "a hypothesis\n"
    assert sorted(p.name for p in (archive / "jobs").iterdir()) == ["baseline_s2"]
    assert not (wd / "jobs" / "combination_s2" / "done.json").exists()
    os.remove(wd / "jobs" / "combination_s2" / "model_step_500.pt")
    proc = merge("merge", str(tgz))
    assert proc.returncode == 0, proc.stderr
    assert "baseline_s2 left out: " in proc.stderr and proc.stdout.rstrip().endswith(": combination_s2")
    assert json.loads((archive / "jobs" / "combination_s2" / "done.json").read_text())["device"] == "NVIDIA H200"
    proc = merge("merge", str(tgz))
    assert proc.returncode == 2 and "nothing merged" in proc.stderr and "exists already" in proc.stderr
    for args, said in ((["merge", str(tmp_path / "none.tgz")], "merge: give a jobs_NAME.tgz"),
                       (["nothing"], "give wheels or stage (here), run (on the device)")):
        proc = merge(*args)
        assert proc.returncode == 2 and said in proc.stderr, (args, proc.stderr)
    proc = subprocess.run(["bash", script, "run"], capture_output=True, text=True,
                          env=dict(env, OUT=str(tmp_path), STATE=str(tmp_path / "state")))
    assert proc.returncode == 2 and "no wave on this machine yet: WAVE= or JOBS= starts one" in proc.stderr
    # stage: only what the jobs read (no manifest, results or logs of FROM's runs), into .gpu/W
    src = tmp_path / "src"
    for f in ("data/ready", "data/train.src", "align/train.gdfa", "vocab.src", "vocab.tgt", "preorderer.xlp",
              "preorderer_10000.json", "manifest.json", "results.json", "logs/x.log", "jobs/baseline_s1/done.json"):
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        (src / f).write_text(f)
    stage = ["bash", str(checkout / "tools" / "study" / "gpu_evidence.sh"), "stage"]
    proc = subprocess.run(stage, capture_output=True, text=True, env=dict(run_env(), W="runs/w_gpu", FROM=str(src)))
    assert proc.returncode == 2 and ".whl/ lacks the wheels: bash tools/study/gpu_evidence.sh wheels" in proc.stderr
    (checkout / ".whl").mkdir()
    (checkout / ".whl" / "OpenNMT_py-3.5.1-py3-none-any.whl").write_text("")
    (checkout / ".git" / "info").mkdir(parents=True)
    proc = subprocess.run(stage, capture_output=True, text=True, env=dict(run_env(), W="runs/w_gpu", FROM=str(wd)))
    assert proc.returncode == 2 and f"{wd} is not prepared" in proc.stderr
    (checkout / ".gpu" / "runs" / "an_earlier_wave").mkdir(parents=True)  # staged before: not carried again
    proc = subprocess.run(["bash", str(checkout / "tools" / "study" / "gpu_evidence.sh"), "stage"], capture_output=True,
                          text=True, env=dict(run_env(), W="runs/w_gpu", FROM=str(src)))
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (checkout / ".gpu" / "runs").iterdir()] == ["w_gpu"]
    staged = checkout / ".gpu" / "runs" / "w_gpu"
    assert sorted(str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file()) == [
        "align/train.gdfa", "data/ready", "data/train.src", "preorderer.xlp", "preorderer_10000.json", "vocab.src",
        "vocab.tgt"]
    assert "/.gpu/" in (checkout / ".git" / "info" / "exclude").read_text().split()
    # merge into a work directory only the device trained in: FROM's splits too (its report reads them), once
    fresh = tmp_path / "jobs_w_fresh.tgz"
    fresh.write_bytes(tgz.read_bytes())
    proc = subprocess.run(["bash", script, "merge", str(fresh)], capture_output=True, text=True,
                          env=dict(env, FROM=str(src)))
    assert proc.returncode == 0, proc.stderr
    got = checkout / "runs" / "w_fresh"
    assert (got / "data" / "train.src").read_text() == "data/train.src" and (got / "preorderer.xlp").exists()
    assert not (got / "logs").exists() and not (got / "jobs" / "baseline_s1").exists()  # not FROM's history
    assert (got / "jobs" / "baseline_s2" / "hyp.test").read_text() == "a hypothesis\n"


def test_the_gpu_plateau_wave_is_the_cpu_queues_stage_but_its_layout():
    """tools/study/gpu_evidence.sh wave 7 trains the LSTM's plateau stage with tools/study/study_queue.sh's options (the same
    system, seeds, split, rounds and rule) in the same work directory and archive; only the layout may differ."""
    import re
    import shlex
    import subprocess

    from tests.conftest import REPO, run_env

    def options(words):
        pairs = dict(zip(words[::2], words[1::2]))
        assert len(pairs) * 2 == len(words) and all(k.startswith("--") for k in pairs), words
        return {k: v for k, v in pairs.items() if k not in ("--parallel", "--threads")}

    queue = re.search(r"^PLATEAU=\(([^)]*)\)", (REPO / "tools" / "study" / "study_queue.sh").read_text(), re.M)
    cpu = options(shlex.split(queue.group(1)))
    proc = subprocess.run(["bash", str(REPO / "tools" / "study" / "gpu_evidence.sh"), "list"], capture_output=True, text=True,
                          env=dict(run_env(), WAVE="7"), cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    w, _, tier, jobs, *rest = shlex.split(line)
    gpu = dict(options(rest), **{"--workdir": w, "--archive": f"reports/{w.split('/')[-1]}"})
    assert (tier, gpu) == ("plateau", cpu)
    assert jobs.split(",") == [f"{cpu['--plateau-system']}_plateau_s{s}" for s in cpu["--seeds"].split(",")]


def test_the_gpu_waves_name_jobs_of_their_tiers_and_cover_tiers_c_and_d_with_their_own_references():
    """tools/study/gpu_evidence.sh's waves: every job named is one that `onmt-xl evidence --stage main` with the wave's
    options trains (a misspelt name would train nothing, silently), and waves 1-2 give tiers (c) and (d), each in
    a GPU work directory of its own, every job of the tier with the baseline and Combination runs it compares with
    (tier d's rerun of its clean run aside: there that run trains on the same GPU)."""
    import argparse
    import shlex
    import subprocess

    from onmt_xl.experiments.evidence import TIERS, add_evidence, tier_jobs
    from tests.conftest import REPO

    parser = argparse.ArgumentParser()
    add_evidence(parser.add_subparsers(dest="command"))
    named = {}
    for wave in ("1", "2"):
        proc = subprocess.run(["bash", str(REPO / "tools" / "study" / "gpu_evidence.sh"), "list"], capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "WAVE": wave})
        assert proc.returncode == 0, proc.stderr
        for line in proc.stdout.splitlines():
            w, _from, tier, jobs, *extra = shlex.split(line)
            args = parser.parse_args(["evidence", "--stage", "main", "--steps", "8000", "--tier", tier, "--workdir", w,
                                      *extra])
            known = [j.name for j in tier_jobs(args)]
            assert set(jobs.split(",")) <= set(known), (wave, set(jobs.split(",")) - set(known))
            assert len(jobs.split(",")) <= 16 and args.max_steps == 8000
            named.setdefault(w, []).extend(jobs.split(","))
    args = {w: parser.parse_args(["evidence", "--stage", "main", "--steps", "8000", "--workdir", w, *a])
            for w, a in (("runs/evidence_jaen_gpu", ["--tier", "c", "--systems", ",".join(("baseline", "combination",
                                                                                           *TIERS["c"][0])),
                                                    "--max-steps", "8000"]),
                         ("runs/evidence_jaen_gpu_d", ["--tier", "d", "--systems", "headxl,combination", "--seeds", "1",
                                                      "--max-steps", "8000"]))}
    assert set(named) == set(args)
    for w, jobs in named.items():  # every job of the tier, once; not the rerun, whose clean run trains on the GPU too
        assert len(jobs) == len(set(jobs)) and set(jobs) == {j.name for j in tier_jobs(args[w])
                                                             if "_rerun_" not in j.name}, w
    assert {"baseline_s1", "baseline_s2", "combination_s1", "combination_s2"} <= set(named["runs/evidence_jaen_gpu"])
    assert len(named["runs/evidence_jaen_gpu"]) == 22 and len(named["runs/evidence_jaen_gpu_d"]) == 10


def test_the_plain_words_verdict_names_every_xl_variant_its_interval_and_the_largest_gain_left_open():
    from onmt_xl.experiments.evidence_markdown import plain_words

    def cmp(delta, low, high, verdict, runs=3):
        return {"delta": delta, "low": low, "high": high, "p": 0.5, "p_holm": 0.8, "verdict": verdict,
                "system_runs": runs, "baseline_runs": 3, "family": "XL PE and Relative PE"}

    report = {"comparisons": {"relative_pe": cmp(2.0, 1.0, 3.0, "helps"),
                              "inxl": cmp(-1.15, -2.77, 0.68, "no evidence either way", 2),
                              "combination": cmp(-0.31, -2.07, 1.46, "no evidence either way")}}
    words = plain_words(report)[-1]
    assert "XL PE neither helps nor hurts detectably in any of its forms" in words
    assert "InXL -1.15 (95 % interval -2.77 to +0.68" in words and "Combination -0.31" in words
    assert "The 95 % intervals reach no higher than +1.46 BLEU" in words  # Relative PE is not XL PE: its +3.00 does not count
    assert "Interim: InXL has fewer seeds than the 3" in words and "HeadXL" not in words
    report["comparisons"]["headxl"] = cmp(1.9, 0.4, 3.4, "helps")
    words = plain_words(report)[-1]
    assert "XL PE helps as HeadXL; no detectable difference otherwise." in words and "no higher than +3.40 BLEU" in words
    report["comparisons"] = {k: cmp(-2.0, -3.0, -1.0, "hurts") for k in ("inxl", "headxl", "combination")}
    words = plain_words(report)[-1]
    assert "XL PE hurts as InXL and HeadXL and Combination." in words and "no higher than -1.00 BLEU: below zero." in words
    assert "Interim" not in words
    assert plain_words({"comparisons": {"relative_pe": cmp(0.1, -1, 1, "no evidence either way")}}) == []


def test_comparisons_on_the_more_and_the_less_reordered_half_of_the_test_pairs(tmp_path):
    """The halves come from each test pair's monotone tau (its links' target order against the source order):
    a system better only on the reversed pairs shows its gain in the 'more reordered' half alone."""
    from onmt_xl.experiments.evidence_markdown import markdown
    from onmt_xl.experiments.evidence_report import build_report, monotone_taus

    refs = _fake_study(tmp_path)
    (tmp_path / "data" / "test.src").write_text("\n".join(" ".join(f"s{k}" for k in range(8)) for _ in refs) + "\n")
    # pairs 0, 2, 4, ... reversed (tau 0), the others monotone (tau 1); pair 1 has one link only (tau 1 by convention)
    links = [" ".join(f"{k}-{7 - k if i % 2 == 0 else k}" for k in range(8)) for i in range(len(refs))]
    links[1] = "3-3"
    (tmp_path / "align").mkdir()
    (tmp_path / "align" / "test.gdfa").write_text("\n".join(links) + "\n")
    taus = monotone_taus(tmp_path)
    assert taus[:4] == [0.0, 1.0, 0.0, 1.0] and len(taus) == len(refs)
    for seed in (1, 2, 3):  # Combination: the references on the reversed pairs, the baseline's noise elsewhere
        base = (tmp_path / "jobs" / f"baseline_s{seed}" / "hyp.test").read_text().splitlines()
        hyp = [ref if i % 2 == 0 else base[i] for i, ref in enumerate(refs)]
        (tmp_path / "jobs" / f"combination_s{seed}" / "hyp.test").write_text("\n".join(hyp) + "\n")
    rep = build_report(tmp_path, ["baseline", "combination", "inxl"], [1, 2, 3], n_samples=200, seed=3)
    split = rep["by_reordering"]
    assert split["halves"] == {"more": {"sentences": 30, "mean_tau": 0.0}, "less": {"sentences": 30, "mean_tau": 1.0}}
    rows = {r["system"]: r for r in split["rows"]}
    assert list(rows) == ["inxl", "combination", "combination_oracle_vs_predicted"]
    assert rows["combination"]["more"]["delta"] > 20 and rows["combination"]["more"]["verdict"] == "helps"
    less = rows["combination"]["less"]
    assert less["delta"] == 0 and less["verdict"] == "no evidence either way"
    assert rows["combination"]["more"]["p_holm"] >= rows["combination"]["more"]["p"]  # Holm over all 6 cells
    assert "Where a gain would be" in markdown(rep) and "| Combination | +" in markdown(rep)
    (tmp_path / "align" / "test.gdfa").unlink()  # without the test pairs' links: no such section
    rep = build_report(tmp_path, ["baseline", "combination"], [1, 2, 3], n_samples=50, seed=3)
    assert rep["by_reordering"] is None and "Where a gain would be" not in markdown(rep)


def test_the_decisive_split_gpu_waves_cover_tiers_c_i_d_h_with_their_own_references():
    """Waves 4-6 (reports/PREREG_decisive_baselines.md on a GPU): every job named is one the line's options train;
    together they give the decisive split's tiers c, i and h with their own baseline and Combination runs, and tier d
    with its own default runs (its rerun of the clean run aside), each comparison on the device, no job twice, at
    most 16 jobs a wave, and no work directory twice in one wave (its lock)."""
    import argparse
    import shlex
    import subprocess

    from onmt_xl.experiments.evidence import TIERS, add_evidence, tier_jobs
    from tests.conftest import REPO

    parser = argparse.ArgumentParser()
    add_evidence(parser.add_subparsers(dest="command"))
    named = {}
    for wave in ("4", "5", "6"):
        proc = subprocess.run(["bash", str(REPO / "tools" / "study" / "gpu_evidence.sh"), "list"], capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "WAVE": wave})
        assert proc.returncode == 0, proc.stderr
        lines = [shlex.split(line) for line in proc.stdout.splitlines()]
        assert len({line[0] for line in lines}) == len(lines)  # one line per work directory in a wave
        assert sum(len(line[3].split(",")) for line in lines) <= 16
        for w, source, tier, jobs, *extra in lines:
            assert source == "runs/decisive_jaen"
            args = parser.parse_args(["evidence", "--stage", "main", "--steps", "8000", "--tier", tier, "--workdir", w,
                                      *extra])
            assert args.test_from_train == 5000 and args.max_steps == 8000
            assert args.inxl_init == (None if tier == "h" else "identity")  # as tools/study/decisive_queue.sh's tiers
            known = {j.name for j in tier_jobs(args)}
            assert set(jobs.split(",")) <= known, (wave, set(jobs.split(",")) - known)
            named.setdefault(w, []).extend(jobs.split(","))
    for jobs in named.values():
        assert len(jobs) == len(set(jobs))
    gpu = set(named["runs/decisive_jaen_gpu"])
    systems = [*TIERS["c"][0], *TIERS["i"][0], *TIERS["h"][0]]
    assert {f"{s}_s{k}" for s in systems for k in (1, 2)} <= gpu
    assert {f"{s}_oracle_s{k}" for s in ("combination", "prereorder") for k in (1, 2)} <= gpu
    assert {f"baseline_s{k}" for k in (1, 2, 3, 4)} | {"combination_s1", "combination_s2"} <= gpu
    d = parser.parse_args(["evidence", "--stage", "main", "--steps", "8000", "--tier", "d", "--systems",
                           "headxl,combination", "--seeds", "1", "--max-steps", "8000"])
    assert set(named["runs/decisive_jaen_gpu_d"]) == {j.name for j in tier_jobs(d) if "_rerun_" not in j.name}


def test_a_checkpoint_cut_short_by_a_kill_is_set_aside_and_training_resumes_from_the_one_before(tmp_path, monkeypatch):
    import torch

    from onmt_xl.experiments import jobs
    from onmt_xl.experiments.evidence import Job

    monkeypatch.setattr(jobs, "count_checkpoint_parameters", lambda path: {"parameters": torch.load(path)["step"]})

    job = Job("baseline_s1", "baseline", 1, train_steps=30)
    runner = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), [job], preset="demo", train_steps=30, gpu=False)
    jd = tmp_path / "jobs" / job.name
    jd.mkdir(parents=True)
    torch.save({"step": 10}, jd / "model_step_10.pt")
    torch.save({"step": 20}, jd / "model_step_20.pt")
    whole = (jd / "model_step_20.pt").read_bytes()
    (jd / "model_step_30.pt").write_bytes(whole[: len(whole) // 2])  # the final one, killed while saving
    (jd / "train.log").write_text("")
    calls = []

    def run(args, log, commands, **kw):
        calls.append([str(a) for a in args])
        torch.save({"step": 30}, jd / "model_step_30.pt")
        return 1.0

    runner._run = run
    assert runner.train(job)  # not recorded as trained: the cut-short final checkpoint is no model
    assert calls[0][-3:] == ["-train_from", str(jd / "model_step_20.pt"), "-xl_exact_resume"]
    assert (jd / "model_step_30.pt.broken").read_bytes() == whole[: len(whole) // 2]
    done = json.loads((jd / "done.json").read_text())
    assert done["resumed_from"] == "model_step_20.pt" and done["parameters"] == 30  # the model trained again


def test_crossfit_stage_writes_positions_and_seen_against_unseen_figures(tmp_path):
    """reports/PREREG_xlpos.md, stage 1: the training split's cross-fitted positions, checked against the corpus by
    the transform's reader, and crossfit.json's figures; tier x's jobs train on them."""
    from onmt_xl.core.data import synthetic
    from onmt_xl.core.errors import XLUsageError
    from onmt_xl.experiments.evidence import TIERS, tier_main_jobs
    from onmt_xl.experiments.stages import CROSSFIT_FOLDS
    from onmt_xl.core.reorder.positions_file import read_positions

    (tmp_path / "data").mkdir()
    (tmp_path / "align").mkdir()
    synthetic.write(synthetic.generate(120, seed=3), str(tmp_path / "data" / "train"))
    (tmp_path / "data" / "train.align").rename(tmp_path / "align" / "train.gdfa")
    runner = Runner(Corpus("a", "b", "c", "d"), str(tmp_path), [], preset="demo", train_steps=4, gpu=False,
                    preorder_iterations=1)
    runner.preorder_options = {"tiebreak_null": "none"}
    runner.preorder = lambda pairs=None: None  # the full preorderer, trained here by hand (no test split to score)
    from onmt_xl.core.align.pharaoh import read_pharaoh
    from onmt_xl.core.reorder.preorderer import Preorderer

    src = [l.split() for l in (tmp_path / "data" / "train.src").read_text().splitlines()]
    Preorderer.train(src, read_pharaoh(str(tmp_path / "align" / "train.gdfa"), [len(s) for s in src]),
                     iterations=1, tiebreak_null="none").save(str(runner.preorderer_path()))
    runner.crossfit()
    header, rows = read_positions(str(runner.crossfit_path()))
    assert header.lines == len(src) == len(rows) and header.made["folds"] == CROSSFIT_FOLDS
    assert all(sorted(r) == list(range(len(s))) for r, s in zip(rows, src))
    figures = json.loads((tmp_path / "crossfit.json").read_text())
    assert figures["options"] == {"tiebreak_null": "none", "iterations": 1}
    assert figures["sample"]["sentences"] == len(src)
    assert 0 < figures["sample"]["crossfit"]["tau"] <= 1 and 0 < figures["sample"]["full_preorderer"]["tau"] <= 1
    stamp = runner.crossfit_path().stat().st_mtime_ns
    runner.crossfit()  # made: not again
    assert runner.crossfit_path().stat().st_mtime_ns == stamp
    runner.preorder_iterations = 2
    with pytest.raises(XLUsageError, match=r"was made with preorderer options .*delete it and crossfit.json"):
        runner.crossfit()
    jobs = tier_main_jobs("x", *TIERS["x"], 8000, 500, 5, 1, 10000)
    assert [j.name for j in jobs] == [f"combination_xfit_s{s}" for s in range(1, 9)]
    assert jobs[0].train_steps == 10000 and jobs[1].train_steps == 8000 and all(j.xl_train == "crossfit" for j in jobs)
    cfg = runner.job_config(jobs[0])
    assert cfg["xl_positions_suffix"] == ".xlpos" and cfg["data"]["train"]["path_src"] == str(tmp_path / "data" / "train.src")
