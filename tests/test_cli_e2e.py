"""End to end through the stock OpenNMT-py commands, with nothing imported by hand."""

import subprocess
from pathlib import Path

import pytest
import torch
import yaml

import onmt_xl
from onmt_xl.experiments.configs import SYSTEMS, config, source_transform
from tests.conftest import run_env
from tests.helpers import stock_cli, tiny_corpus, tiny_preorderer

TINY = dict(
    enc_layers=1, dec_layers=1, heads=4, hidden_size=32, word_vec_size=32, transformer_ff=64,
    train_steps=12, valid_steps=12, save_checkpoint_steps=6, report_every=6, batch_size=512,
    valid_batch_size=512, bucket_size=512, warmup_steps=4, xl_heads=2,
)


def run(*args, check=True):
    proc = subprocess.run([stock_cli(args[0]), *args[1:]], capture_output=True, text=True, env=run_env())
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    wd = tmp_path_factory.mktemp("e2e")
    data = wd / "data"
    data.mkdir()
    corpus = tiny_corpus(data, n=300)
    for ext in ("src", "tgt"):
        lines = (data / f"train.{ext}").read_text().splitlines()
        (data / f"valid.{ext}").write_text("\n".join(lines[:40]) + "\n")
    tiny_preorderer(wd, corpus).rename(wd / "preorderer.xlp")
    (wd / "align").mkdir()
    (data / "train.align").rename(wd / "align" / "train.gdfa")  # gold links stand in for eflomal's
    return wd


def write_config(wd: Path, system: str, **extra) -> Path:
    cfg = config(system, str(wd), {**TINY, **extra})
    path = wd / f"{system}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def trained_combination(workdir):
    cfg = write_config(workdir, "combination", num_workers=1)  # transform runs in a data worker
    run("onmt_build_vocab", "-config", str(cfg), "-n_sample", "-1")
    run("onmt_train", "-config", str(cfg))
    return workdir / "models" / "combination_step_12.pt"


def test_translate_with_the_transform(workdir, trained_combination):
    src = workdir / "test.src"
    train = (workdir / "data" / "train.src").read_text().splitlines()
    longest = max(train, key=lambda s: len(s.split()))
    long_line = " ".join([longest] * 3)  # longer than any training sentence: exact XL positions still
    src.write_text("\n".join(train[:5] + [long_line]) + "\n")
    out = workdir / "hyp.txt"
    run("onmt_translate", "-model", str(trained_combination), "-src", str(src), "-output", str(out),
        "-transforms", "xl_position", "-xl_preorderer", str(workdir / "preorderer.xlp"), "-beam_size", "2")
    assert len(out.read_text().splitlines()) == 6


@pytest.mark.parametrize("side", ["src", "tgt"])
def test_translate_warns_once_for_a_preorderer_from_other_text(workdir, trained_combination, side):
    """The validation sources: the preorderer's own kind of text, no warning. The validation targets (another
    language) as the source: one warning line naming the preorderer file, exit status 0 and every line translated."""
    src = workdir / "data" / f"valid.{side}"
    out = workdir / f"hyp_{side}.txt"
    proc = run("onmt_translate", "-model", str(trained_combination), "-src", str(src), "-output", str(out),
               "-transforms", "xl_position", "-xl_preorderer", str(workdir / "preorderer.xlp"), "-beam_size", "2")
    lines = [line for line in proc.stderr.splitlines() if "source tokens of" in line]
    assert len(out.read_text().splitlines()) == len(src.read_text().splitlines())
    if side == "src":
        assert lines == [], proc.stderr[-3000:]
    else:
        assert len(lines) == 1, proc.stderr[-3000:]
        assert lines[0].startswith(f"xl_position: warning: the preorderer {workdir / 'preorderer.xlp'} knows only 0%")


EARLIER = "a translation from an earlier run\n"


def earlier_output(workdir: Path, name: str) -> Path:
    """An -output file that a failing run must leave as it was (the plug-in opens it at the first line)."""
    out = workdir / name
    out.write_text(EARLIER)
    return out


def assert_one_line(proc, code: int, *names) -> None:
    """The command stopped with ``code`` and one ``PROG: error:`` line naming ``names``, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert len(lines) == 1, proc.stderr[-3000:]
    for name in names:
        assert str(name) in lines[0], (name, lines[0])


def translate_xl(workdir, model, src, out, *extra):
    return run("onmt_translate", "-model", str(model), "-src", str(src), "-output", str(out), "-beam_size", "2",
               *extra, check=False)


def test_translate_without_the_transform_fails(workdir, trained_combination):
    out = earlier_output(workdir, "nope.txt")
    proc = translate_xl(workdir, trained_combination, workdir / "data" / "valid.src", out)
    assert_one_line(proc, 2, "needs cross-lingual positions")  # a usage error: exit 2, as argparse
    assert out.read_text() == EARLIER


@pytest.mark.parametrize("problem, code", [("corrupt", 1), ("missing", 2)])
def test_translate_with_a_bad_preorderer_fails_at_startup(workdir, trained_combination, problem, code):
    bad = workdir / f"{problem}.xlp"
    if problem == "corrupt":
        bad.write_text("not a preorderer")
    out = earlier_output(workdir, f"{problem}.hyp")
    proc = translate_xl(workdir, trained_combination, workdir / "data" / "valid.src", out,
                        "-transforms", "xl_position", "-xl_preorderer", str(bad))
    # the plug-in's excepthook: the message alone, not under OpenNMT's traceback
    assert_one_line(proc, code, f"onmt_translate: error: {bad}")
    assert out.read_text() == EARLIER


def test_translate_non_utf8_source_names_the_line(workdir, trained_combination):
    lines = (workdir / "data" / "valid.src").read_text().splitlines()[:4]
    src = workdir / "latin1.src"
    src.write_bytes("\n".join(lines[:2]).encode() + "\ncaf\u00e9\n".encode("latin-1") + lines[3].encode() + b"\n")
    out = earlier_output(workdir, "latin1.hyp")
    proc = translate_xl(workdir, trained_combination, src, out, "-transforms", "xl_position",
                        "-xl_preorderer", str(workdir / "preorderer.xlp"))
    assert_one_line(proc, 1, f"{src}, line 3", "not UTF-8")
    assert out.read_text() == EARLIER


def test_translate_crlf_source_as_lf(workdir, trained_combination):
    """Windows line ends: the same translations as the same lines ended by LF."""
    lines = (workdir / "data" / "valid.src").read_text().splitlines()[:6]
    hyps = []
    for name, end in (("lf", "\n"), ("crlf", "\r\n")):
        src = workdir / f"{name}.src"
        src.write_bytes("".join(line + end for line in lines).encode())
        proc = translate_xl(workdir, trained_combination, src, workdir / f"{name}.hyp", "-transforms", "xl_position",
                            "-xl_preorderer", str(workdir / "preorderer.xlp"))
        assert proc.returncode == 0, proc.stderr[-3000:]
        hyps.append((workdir / f"{name}.hyp").read_bytes())
    assert hyps[0] == hyps[1] and len(hyps[0].splitlines()) == 6


def test_train_from_resumes_an_xl_model(workdir, trained_combination):
    cfg = write_config(workdir, "combination", train_steps=16, save_checkpoint_steps=16)
    run("onmt_train", "-config", str(cfg), "-train_from", str(trained_combination))
    onmt_xl.register()  # the torch>=2.6 checkpoint fix
    resumed = torch.load(workdir / "models" / "combination_step_16.pt", map_location="cpu")
    assert resumed["opt"].encoder_type == "xl_combination"
    assert any("inxl" in k for k in resumed["model"])


def test_average_models(workdir, trained_combination):
    out = workdir / "avg.pt"
    run("onmt_average_models", "-models", str(workdir / "models" / "combination_step_6.pt"),
        str(trained_combination), "-output", str(out))
    assert out.exists()


def test_tau_above_heads_is_rejected_by_onmt_train(workdir, trained_combination):
    cfg = write_config(workdir, "headxl", xl_heads=9, train_steps=1)
    proc = run("onmt_train", "-config", str(cfg), check=False)
    assert_one_line(proc, 2, "xl_heads must be in [0, heads=4]")


def test_unknown_option_value_is_rejected(workdir, trained_combination):
    cfg = write_config(workdir, "inxl", xl_inxl_fusion="lowrank", train_steps=1)
    proc = run("onmt_train", "-config", str(cfg), check=False)
    assert proc.returncode == 2 and "xl_inxl_fusion" in proc.stderr and "Traceback" not in proc.stderr


def test_baseline_and_relative_pe_train(workdir, trained_combination):
    for system in ("baseline", "relative_pe"):
        cfg = write_config(workdir, system, train_steps=4, save_checkpoint_steps=4, valid_steps=4)
        run("onmt_train", "-config", str(cfg), "-src_vocab", str(workdir / "vocab.src"))
        assert (workdir / "models" / f"{system}_step_4.pt").exists()


def test_xl_encoder_without_the_transform_is_rejected_at_startup(workdir, trained_combination):
    cfg = config("combination", str(workdir), {**TINY, "train_steps": 1})
    cfg["data"]["valid"]["transforms"] = []
    path = workdir / "no_transform.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = run("onmt_train", "-config", str(path), check=False)
    assert_one_line(proc, 2, "corpus 'valid' does not list the xl_position transform")


@pytest.mark.parametrize("system", [s for s in SYSTEMS if s not in ("baseline", "relative_pe", "combination", "refsr")])
def test_every_other_system_trains_and_translates(workdir, trained_combination, system):
    """Every system of onmt_xl.experiments.configs trains on the synthetic corpus (the four left out train in the tests
    above and below) and translates every line of a source."""
    cfg = write_config(workdir, system, train_steps=4, save_checkpoint_steps=4, valid_steps=4)
    run("onmt_train", "-config", str(cfg))
    out = workdir / f"hyp.{system}"
    args = ["onmt_translate", "-model", str(workdir / "models" / f"{system}_step_4.pt"), "-src",
            str(workdir / "data" / "valid.src"), "-output", str(out), "-beam_size", "2"]
    transform = source_transform(system)
    if transform:
        args += ["-transforms", transform, "-xl_preorderer", str(workdir / "preorderer.xlp")]
    run(*args)
    assert len(out.read_text().splitlines()) == 40


def test_refsr_trains_with_the_reordering_loss_and_translates_without_alignments(workdir, trained_combination):
    cfg = write_config(workdir, "refsr", train_steps=4, save_checkpoint_steps=4, valid_steps=4, report_every=2)
    proc = run("onmt_train", "-config", str(cfg))
    assert "reordering loss (lambda * l_j, -xl_reordering_loss) per source word" in proc.stdout + proc.stderr
    out = workdir / "hyp.refsr"
    run("onmt_translate", "-model", str(workdir / "models" / "refsr_step_4.pt"), "-src",
        str(workdir / "data" / "valid.src"), "-output", str(out), "-beam_size", "2")
    assert len(out.read_text().splitlines()) == 40
    from onmt_xl.core.align.pharaoh import read_pharaoh
    from onmt_xl.experiments.analysis import sim_metric

    src = [line.split() for line in (workdir / "data" / "valid.src").read_text().splitlines()]
    links = read_pharaoh(str(workdir / "align" / "train.gdfa"))[: len(src)]
    sim, words, pe_sim = sim_metric(str(workdir / "models" / "refsr_step_4.pt"), src, links)
    assert words == sum(map(len, src))
    from onmt_xl.core.positions import sinusoid
    from onmt_xl.core.reorder.oracle import btg_oracle

    d = TINY["hidden_size"]
    # Sim (Eq. 12) by hand from the last layer's predicted positions b_j (Eq. 5), caught by a hook: with the
    # default window D = 0.5 the Gaussian window (Eq. 6) holds the one integer s_j = round(b_j), so
    # pr_j = w·PE_{s_j} with w > 0 and cos(pr_j, re_j) = cos(PE_{s_j}, PE_{r_j}).
    from torch.nn.utils.rnn import pad_sequence

    from onmt_xl.experiments.analysis import load_model

    model, vocabs, model_opt = load_model(str(workdir / "models" / "refsr_step_4.pt"))
    assert model_opt.xl_exgre_window == 0.5
    caught = []
    model.encoder.predictors[-1].register_forward_hook(lambda m, args, out: caught.append(out.detach()))
    ids = pad_sequence([torch.tensor(vocabs["src"](s)) for s in src], batch_first=True,
                       padding_value=vocabs["src"]["<blank>"])
    r_xl = [btg_oracle(len(s), ls).pos_xl for s, ls in zip(src, links)]
    pos = pad_sequence([torch.tensor(x) for x in r_xl], batch_first=True)
    with torch.no_grad():
        model.encoder(torch.stack((ids, pos), dim=2), torch.tensor([len(s) for s in src]))
    (b,) = caught
    by_hand = [float(torch.nn.functional.cosine_similarity(sinusoid(torch.tensor([round(float(b[k, j]))]), d),
                                                          sinusoid(torch.tensor([r_xl[k][j]]), d)))
               for k, s in enumerate(src) for j in range(len(s))]
    assert sim == pytest.approx(sum(by_hand) / len(by_hand), abs=1e-4)
    # the PE reference by hand: cos(PE_j, PE_{r_j}) is 1 exactly where the oracle keeps a word in place
    cos = [float(torch.nn.functional.cosine_similarity(sinusoid(torch.tensor([j]), d), sinusoid(torch.tensor([r]), d)))
           for s, ls in zip(src, links) for j, r in enumerate(btg_oracle(len(s), ls).pos_xl)]
    assert pe_sim == pytest.approx(sum(cos) / len(cos), abs=1e-5)


def test_mistyped_options_are_named(workdir, trained_combination):
    """onmt_train and onmt_build_vocab drop options they do not know (parse_known_args): the plug-in names each,
    with the closest known one; onmt_build_vocab says nothing of onmt_train's options (they share the YAML)."""
    cfg = write_config(workdir, "baseline", train_steps=1, save_checkpoint_steps=1, valid_steps=1, xl_haeds=2)
    proc = run("onmt_train", "-config", str(cfg), "-src_vocab", str(workdir / "vocab.src"), "-lerning_rate", "2")
    warnings = [line for line in proc.stderr.splitlines() if ": warning: unknown option" in line]
    assert warnings == [
        "onmt_train: warning: unknown option xl_haeds (command line or -config file) is ignored; did you mean xl_heads?",
        "onmt_train: warning: unknown option lerning_rate (command line or -config file) is ignored; "
        "did you mean learning_rate?",
    ]
    proc = run("onmt_build_vocab", "-config", str(cfg), "-n_sample", "20", "-save_data", str(workdir / "bv"),
               "-src_vocab", str(workdir / "bv.src"), "-tgt_vocab", str(workdir / "bv.tgt"), "-overwrite")
    warnings = [line for line in proc.stderr.splitlines() if ": warning: unknown option" in line]
    assert warnings == ["onmt_build_vocab: warning: unknown option xl_haeds (command line or -config file) is ignored; "
                        "did you mean xl_heads?"]


def test_unknown_option_warnings_skip_values():
    from onmt_xl.opennmt.seams.messages import unknown_option_warnings

    lines = unknown_option_warnings("onmt_train", ["--xl_haeds=2", "-beam_size", "5", "-x", "-3", "--ok"],
                                    ["xl_heads", "heads"], also_fine={"ok"})
    assert lines == ["onmt_train: warning: unknown option xl_haeds (command line or -config file) is ignored; "
                     "did you mean xl_heads?",
                     "onmt_train: warning: unknown option beam_size (command line or -config file) is ignored; "
                     "see onmt_train -h",
                     "onmt_train: warning: unknown option x (command line or -config file) is ignored; "
                     "see onmt_train -h"]
