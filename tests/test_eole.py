"""The Eole adapter (issue 38, groundwork): the same weights give the same encoder output in OpenNMT-py and in Eole,
and Eole's ``xl_position`` transform gives the preorderer's positions.

Skipped where Eole is not installed (the system Python and CI for now). To run it: a venv that sees the system
packages, ``python3 -m venv --system-site-packages "$EOLE_VENV" && "$EOLE_VENV"/bin/pip install eole==0.6.4 aiohttp``
(Eole's CLI imports aiohttp without declaring it), then ``"$EOLE_VENV"/bin/python -m pytest -q tests/test_eole.py``
from the checkout (reports/EOLE.md).
"""

import pytest

pytest.importorskip("eole", reason="Eole is not installed (pip install eole==0.6.4 in a venv; see this file's docstring)")
pytest.importorskip("onmt", reason="the equivalence checks build the OpenNMT-py encoder too")

import torch  # noqa: E402
from eole.encoders.transformer import TransformerEncoder  # noqa: E402
from eole.modules.embeddings import Embeddings  # noqa: E402

from onmt_xl.core.channel import MissingXLPositionsError, feeding_xl_positions  # noqa: E402
from onmt_xl.eole.encoders import XLSourceEmbeddings, XLTransformerEncoder, XLTransformerEncoderConfig  # noqa: E402
from onmt_xl.eole.weights import onmt_encoder_to_eole  # noqa: E402
from tests.test_encoders import MONOTONE, REVERSED, batch, build  # noqa: E402

PAD = 1  # tests.test_encoders.vocabs(): <unk>, <blank>, <s>, </s>
SIZES = dict(layers=2, hidden_size=16, src_word_vec_size=16, heads=4, transformer_ff=32, norm_eps=1e-6)
SCRAMBLED = torch.tensor([[2, 0, 4, 1, 3], [1, 2, 0, 0, 0]])


def eole_xl(encoder_type, **options):
    """An Eole XL encoder and its source embeddings, sized like tests.test_encoders.build (OpenNMT-py's defaults: no
    biases, ReLU, layer-norm eps 1e-6)."""
    cfg = XLTransformerEncoderConfig(encoder_type=encoder_type, **SIZES, **options)
    encoder = XLTransformerEncoder(cfg).eval()
    emb = XLSourceEmbeddings.adopt(Embeddings(word_vec_size=16, position_encoding_type="SinusoidalInterleaved",
                                              dropout=0.0, word_padding_idx=PAD, word_vocab_size=24))
    return encoder, emb


def load_onmt_weights(onmt_encoder, encoder, emb):
    enc_state, emb_state = onmt_encoder_to_eole(onmt_encoder.state_dict())
    encoder.load_state_dict(enc_state, strict=True)  # every parameter and buffer of the Eole encoder is set
    missing, unexpected = emb.load_state_dict(emb_state, strict=False)
    assert unexpected == [] and missing == ["pe.pe"], (missing, unexpected)  # Eole's own (equal) PE table


def outputs(encoder_type, pos, onmt_options, eole_options, fed=False):
    onmt_model = build(encoder_type, **onmt_options)
    want, _, _ = onmt_model.encoder(*batch(pos))
    encoder, emb = eole_xl(encoder_type, **eole_options)
    load_onmt_weights(onmt_model.encoder, encoder, emb)
    tokens, _ = batch()
    tokens = tokens[:, :, 0]
    pad_mask = tokens.eq(PAD).unsqueeze(1)  # as EncoderDecoderModel.forward makes it
    with torch.no_grad():
        if fed:  # the channel Eole's stock model forward would use: positions fed around the call
            with feeding_xl_positions(pos):
                got, _ = encoder(emb(tokens), pad_mask=pad_mask)
        else:
            got, _ = encoder(emb(tokens), pad_mask=pad_mask, xl_pos=pos)
    return want.detach(), got, encoder, emb, tokens, pad_mask


CASES = [
    ("xl_combination", dict(xl_heads=2), dict(xl_heads=2)),
    ("xl_combination", dict(xl_heads=4, xl_inxl_fusion="full"), dict(xl_heads=4, xl_inxl_fusion="full")),
    ("xl_combination", dict(xl_heads=1, xl_inxl_fusion="diagonal", xl_inxl_init="absolute"),
     dict(xl_heads=1, xl_inxl_fusion="diagonal", xl_inxl_init="absolute")),
    ("xl_inxl", {}, {}),
    ("xl_headxl", dict(xl_heads=3), dict(xl_heads=3)),
]


@pytest.mark.parametrize("encoder_type,onmt_options,eole_options", CASES)
@pytest.mark.parametrize("pos", [REVERSED, SCRAMBLED], ids=["reversed", "scrambled"])
def test_same_weights_same_encoder_output(encoder_type, onmt_options, eole_options, pos):
    want, got, *_ = outputs(encoder_type, pos, onmt_options, eole_options)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)  # bit-identical on CPU (torch 2.13) when written
    monotone, *_ = outputs(encoder_type, MONOTONE, onmt_options, eole_options)
    assert (monotone - want).abs().max() > 1e-4  # the positions matter at this size: the check is not vacuous


def test_positions_fed_like_opennmt_give_the_same_output():
    want, got, *_ = outputs("xl_combination", SCRAMBLED, dict(xl_heads=2), dict(xl_heads=2), fed=True)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)


def test_fused_inference_projections_keep_the_head_split():
    """``eole predict`` fuses K, V, Q of every encoder layer (``fuse_kvq``); the split first layer must stay split."""
    want, got, encoder, emb, tokens, pad_mask = outputs("xl_combination", REVERSED, dict(xl_heads=2), dict(xl_heads=2))
    for layer in encoder.transformer_layers:
        layer.self_attn._fuse_KVQ()
    assert not encoder.transformer_layers[0].self_attn.fused_kvq and encoder.transformer_layers[1].self_attn.fused_kvq
    with torch.no_grad():
        fused, _ = encoder(emb(tokens), pad_mask=pad_mask, xl_pos=REVERSED)
    torch.testing.assert_close(fused, want, rtol=0, atol=1e-5)


def test_tau_zero_headxl_is_the_stock_eole_encoder():
    """Within Eole: HeadXL with τ = 0 is Eole's own Transformer encoder on the same weights (stock ``src_emb``)."""
    from eole.config.models import TransformerEncoderConfig

    torch.manual_seed(0)
    stock = TransformerEncoder(TransformerEncoderConfig(**SIZES)).eval()
    for p in stock.parameters():
        torch.nn.init.normal_(p, std=0.2)
    stock_emb = Embeddings(word_vec_size=16, position_encoding_type="SinusoidalInterleaved", dropout=0.0,
                           word_padding_idx=PAD, word_vocab_size=24)
    torch.nn.init.normal_(stock_emb.embeddings.weight, std=0.2)  # Eole builds it with skip_init: uninitialised memory
    encoder, emb = eole_xl("xl_headxl", xl_heads=0)
    encoder.load_state_dict(stock.state_dict())
    emb.load_state_dict(stock_emb.state_dict())
    tokens = batch()[0][:, :, 0]
    pad_mask = tokens.eq(PAD).unsqueeze(1)
    with torch.no_grad():
        want, _ = stock(stock_emb(tokens), pad_mask=pad_mask)
        got, _ = encoder(emb(tokens), pad_mask=pad_mask, xl_pos=REVERSED)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


def test_missing_positions_say_how_to_fix_it():
    encoder, emb = eole_xl("xl_combination")
    tokens = batch()[0][:, :, 0]
    with pytest.raises(MissingXLPositionsError, match="xl_position"):
        encoder(emb(tokens), pad_mask=tokens.eq(PAD).unsqueeze(1))


def test_config_checks():
    with pytest.raises(ValueError, match="xl_heads must be in"):
        XLTransformerEncoderConfig(encoder_type="xl_headxl", heads=4, xl_heads=5)
    with pytest.raises(ValueError, match="sinusoidal"):
        XLTransformerEncoderConfig(encoder_type="xl_inxl", position_encoding_type="Rotary")
    assert XLTransformerEncoderConfig(heads=8).resolved_xl_heads == 4


def test_register_adds_the_encoders_and_the_transform():
    from eole.encoders import str2enc
    from eole.transforms import AVAILABLE_TRANSFORMS

    import onmt_xl.eole

    onmt_xl.eole.register()
    assert {name: str2enc[name] for name in ("xl_inxl", "xl_headxl", "xl_combination")} == dict.fromkeys(
        ("xl_inxl", "xl_headxl", "xl_combination"), XLTransformerEncoder)
    assert AVAILABLE_TRANSFORMS["xl_position"].__module__ == "onmt_xl.eole.transforms"
    assert str2enc["transformer"] is TransformerEncoder  # nothing stock is replaced


@pytest.fixture(scope="module")
def preorderer_file(tmp_path_factory):
    from tests.helpers import tiny_corpus, tiny_preorderer

    out = tmp_path_factory.mktemp("eole_pre")
    corpus = tiny_corpus(out, n=120)
    return tiny_preorderer(out, corpus), corpus


def _transform(path):
    from types import SimpleNamespace

    from onmt_xl.eole.transforms import XLPositionConfig, XLPositionTransform

    full = SimpleNamespace(transforms_configs=SimpleNamespace(xl_position=XLPositionConfig(xl_preorderer=str(path))),
                           seed=-1)
    transform = XLPositionTransform(full)
    transform.warm_up()
    return transform


def test_transform_gives_the_preorderers_positions_and_travels_with_the_model(preorderer_file, tmp_path):
    from onmt_xl.core.reorder.preorderer import Preorderer

    path, corpus = preorderer_file
    transform = _transform(path)
    preorderer = Preorderer.load(str(path))
    for src in corpus.src[:20]:
        example = transform.apply({"src": " ".join(src), "tgt": None})
        assert example["xl_pos"] == list(preorderer.pos_xl(list(src)))
        assert transform.apply({"src": list(src)})["xl_pos"] == example["xl_pos"]
    # the preorderer is a model artifact: copied into the model directory, its path rewritten
    saved, artifacts = transform._save_artifacts(str(tmp_path))
    assert artifacts == [path.name] and (tmp_path / path.name).read_bytes() == path.read_bytes()
    assert saved.xl_preorderer == "${MODEL_PATH}/" + path.name


E2E_CONFIG = """
src_vocab: {wd}/vocab.src
tgt_vocab: {wd}/vocab.tgt
save_data: {wd}/data
overwrite: true
n_sample: {n_sample}
seed: 1
data:
  corpus_1: {{path_src: {wd}/train.src, path_tgt: {wd}/train.tgt, transforms: [xl_position]}}
  valid: {{path_src: {wd}/valid.src, path_tgt: {wd}/valid.tgt, transforms: [xl_position]}}
transforms_configs:
  xl_position: {{xl_preorderer: {pre}}}
model:
  architecture: custom
  hidden_size: 16
  layers: 1
  heads: 2
  transformer_ff: 32
  embeddings: {{word_vec_size: 16, position_encoding_type: SinusoidalInterleaved}}
  encoder: {{encoder_type: xl_combination, xl_heads: 1}}
  decoder: {{decoder_type: transformer}}
training:
  model_path: {wd}/model
  train_steps: 6
  valid_steps: 6
  save_checkpoint_steps: 6
  batch_size: 64
  batch_type: sents
  valid_batch_size: 32
  num_workers: 0
  bucket_size: 256
  optim: adam
  learning_rate: 0.001
  dropout: [0.1]
  attention_dropout: [0.1]
"""

ENGINE = """
from onmt_xl.eole.hook import install
install()
import json, sys
from eole.config.run import PredictConfig
from eole.inference_engine import InferenceEnginePY
engine = InferenceEnginePY(PredictConfig(model_path=sys.argv[1], src="dummy", beam_size=2))
_, _, preds = engine.infer_list(open(sys.argv[2]).read().splitlines())
print(json.dumps([p[0] for p in preds]))
"""


def e2e_files(wd, config=E2E_CONFIG):
    """A tiny corpus (train/valid/test), its preorderer and ``vocab.yaml``/``train.yaml`` from ``config`` in ``wd``;
    returns the preorderer's path."""
    from tests.helpers import tiny_corpus, tiny_preorderer

    pre = tiny_preorderer(wd, tiny_corpus(wd, n=120))
    for ext in ("src", "tgt"):
        lines = (wd / f"train.{ext}").read_text().splitlines()
        (wd / f"valid.{ext}").write_text("\n".join(lines[:20]) + "\n")
        (wd / f"test.{ext}").write_text("\n".join(lines[20:26]) + "\n")
    for name, n_sample in (("vocab.yaml", -1), ("train.yaml", 0)):
        (wd / name).write_text(config.format(wd=wd, pre=pre, n_sample=n_sample))
    return pre


def run_eole(command, *args, cwd, env=None, ok=True):
    """``command`` (a list: ``[sys.executable, "-m", "onmt_xl.eole"]`` or the ``eole`` script) with ``args`` on this
    checkout, one thread; asserts the exit status is 0 when ``ok``."""
    import subprocess

    from tests.conftest import run_env

    env = {**run_env(), "OMP_NUM_THREADS": "1", **(env or {})}
    proc = subprocess.run([*command, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if ok:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_eole_train_predict_and_engine_with_an_xl_model(tmp_path):
    """``eole build_vocab``, ``eole train`` and ``eole predict`` (through ``python -m onmt_xl.eole``) with an
    xl_combination model and the xl_position transform; the preorderer travels with the model as an artifact, and
    Eole's InferenceEnginePY (what ``eole serve`` runs) writes what ``eole predict`` writes."""
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import run_env

    wd = tmp_path
    pre = e2e_files(wd)
    env = {**run_env(), "OMP_NUM_THREADS": "1"}

    def eole(*args):
        return run_eole([sys.executable, "-m", "onmt_xl.eole"], *args, cwd=wd)

    eole("build_vocab", "-config", str(wd / "vocab.yaml"))
    eole("train", "-config", str(wd / "train.yaml"))
    config = json.loads((wd / "model" / "config.json").read_text())
    assert config["model"]["encoder"]["encoder_type"] == "xl_combination"
    assert config["transforms_configs"]["xl_position"]["xl_preorderer"] == "${MODEL_PATH}/" + pre.name
    assert (wd / "model" / pre.name).read_bytes() == pre.read_bytes()
    os.remove(pre)  # predict must use the model's own copy
    eole("predict", "-model_path", str(wd / "model"), "-src", str(wd / "test.src"), "-output", str(wd / "hyp.txt"),
         "-beam_size", "2")
    hyp = (wd / "hyp.txt").read_text().splitlines()
    assert len(hyp) == 6
    proc = subprocess.run([sys.executable, "-c", ENGINE, str(wd / "model"), str(wd / "test.src")], cwd=wd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == hyp


STOCK_DUMP = """
import json, sys
if sys.argv[1] == "on":
    from onmt_xl.eole.hook import install
    install()
from eole.config.run import TrainConfig
import eole.config.run as R
config = TrainConfig(**json.loads(sys.argv[2]))
from eole.config import recursive_model_fields_set
out = {"config": json.loads(json.dumps(config.model_dump(), default=str)),
       "saved": json.loads(json.dumps(recursive_model_fields_set(config), default=str)), "encoder": type(config.model.encoder).__name__}
if sys.argv[1] == "on":
    try:
        R.build_model_config({"architecture": "transformer", "encoder": {"encoder_type": "xl_combination"}})
        out["guard"] = None
    except ValueError as err:
        out["guard"] = str(err)
print(json.dumps(out, sort_keys=True, default=str))
"""


def test_a_stock_config_validates_to_the_same_config_with_the_seams_in_place(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import run_env

    stock = {"src_vocab": "v.src", "tgt_vocab": "v.tgt", "data": {"c": {"path_src": "a", "path_tgt": "b",
             "transforms": ["filtertoolong"]}}, "model": {"architecture": "transformer", "hidden_size": 16, "heads": 2,
             "layers": 1, "transformer_ff": 32}, "training": {"train_steps": 1}}
    runs = {}
    for mode in ("off", "on"):  # off: the start-up hook (onmt_xl_hook) switched off too, so Eole is stock
        env = {**run_env(), "ONMT_XL_DISABLE": "1" if mode == "off" else "0"}
        proc = subprocess.run([sys.executable, "-c", STOCK_DUMP, mode, json.dumps(stock)], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert runs["on"].pop("guard").startswith("encoder_type xl_combination: set the model's architecture to 'custom'")
    # what Eole saves with a model (config.json: the fields set) is the same; the full dump differs by a default
    # entry per transform of ours (NestedAllTransformsConfig has a default for every registered transform) and the
    # defaults of our training options (training.xl_exact_resume off, xl_cpu_precision fp32, xl_cpu_kernels stock)
    assert runs["on"]["saved"] == runs["off"]["saved"]
    for name, default in (("xl_exact_resume", False), ("xl_cpu_precision", "fp32"), ("xl_cpu_kernels", "stock")):
        assert name not in runs["off"]["config"]["training"]
        assert runs["on"]["config"]["training"].pop(name) == default
    for name in ("xl_position", "xl_prereorder"):
        assert name not in runs["off"]["config"]["transforms_configs"]
        assert runs["on"]["config"]["transforms_configs"].pop(name)["xl_preorderer"] is None
    assert runs["on"] == runs["off"] and runs["on"]["encoder"] == "TransformerEncoderConfig"
