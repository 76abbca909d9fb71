"""OpenNMT-py 3.5.1 -> Eole 0.6 parameter names of a Transformer encoder (stock, XL or baseline) and decoder (stock or
reordering embeddings), for the equivalence checks of issue 38 and for converting a trained OpenNMT-py model. Pure name
mapping: no framework is imported."""

from __future__ import annotations

import re
from typing import Callable, Dict, Tuple

#: OpenNMT-py encoder-layer parameter (after ``transformer.{i}.``) -> Eole's (after ``transformer_layers.{i}.``)
LAYER_NAMES = {
    "layer_norm.weight": "input_layernorm.weight",
    "layer_norm.bias": "input_layernorm.bias",
    "self_attn.linear_keys.weight": "self_attn.linear_keys.weight",
    "self_attn.linear_keys.bias": "self_attn.linear_keys.bias",
    "self_attn.linear_values.weight": "self_attn.linear_values.weight",
    "self_attn.linear_values.bias": "self_attn.linear_values.bias",
    "self_attn.linear_query.weight": "self_attn.linear_query.weight",
    "self_attn.linear_query.bias": "self_attn.linear_query.bias",
    "self_attn.final_linear.weight": "self_attn.final_linear.weight",
    "self_attn.final_linear.bias": "self_attn.final_linear.bias",
    "feed_forward.w_1.weight": "mlp.gate_up_proj.weight",
    "feed_forward.w_1.bias": "mlp.gate_up_proj.bias",
    "feed_forward.w_2.weight": "mlp.down_proj.weight",
    "feed_forward.w_2.bias": "mlp.down_proj.bias",
    "feed_forward.layer_norm.weight": "post_attention_layernorm.weight",
    "feed_forward.layer_norm.bias": "post_attention_layernorm.bias",
    # xl_relative (Shaw et al. 2018): the table of a^K = a^V, one per layer
    "self_attn.relative_positions_embeddings.weight": "self_attn.relative_positions_embeddings.weight",
}
#: encoder-level parameters kept under the same name (final layer norm, InXL's U and V, the encoder-free relative
#: PE's table ``a``)
SAME = ("layer_norm.weight", "layer_norm.bias", "inxl.U", "inxl.V", "relative.relative_positions_embeddings.weight")
#: encoder-level modules of the baselines, kept under the same names: DiSAN's fusion gates, the positional
#: penalties of reordering embeddings, ExGRE's position predictors and ReFSR's fusion gate
SAME_MODULES = re.compile(r"(gates|penalties|predictors)\.\d+\.[\w.]+|gate\.[\w.]+")
#: OpenNMT-py's source word table (inside its encoder) and its Eole home (the model's ``src_emb``)
ONMT_WORD_TABLE = "embeddings.make_embedding.emb_luts.0.weight"
EOLE_WORD_TABLE = "embeddings.weight"
_LAYER = re.compile(r"transformer\.(\d+)\.(.+)")


def onmt_encoder_to_eole(state: Dict[str, object]) -> Tuple[Dict[str, object], Dict[str, object]]:
    """``(encoder state, src_emb state)`` for Eole from an OpenNMT-py encoder's ``state_dict()``. OpenNMT's PE buffer
    (``...pe.pe``) is dropped: Eole's ``src_emb`` computes the same table. Unknown names (features, other encoders'
    parameters) raise ``KeyError`` naming them, rather than being lost."""
    return _rename(state, "encoder", _LAYER, LAYER_NAMES,
                   lambda name: name in SAME or SAME_MODULES.fullmatch(name) is not None)


def _rename(state: Dict[str, object], part: str, layer_re: re.Pattern, layer_names: Dict[str, str],
            same: Callable[[str], bool]) -> Tuple[Dict[str, object], Dict[str, object]]:
    """``(part's state, its embeddings' state)`` under Eole's names: the word table to the embeddings, OpenNMT's PE
    buffer dropped, a ``layer_re`` match (layer index, name in ``layer_names``) to ``transformer_layers.{i}.``, a
    name ``same`` accepts kept; any other name raises ``KeyError`` naming it."""
    out, emb, unknown = {}, {}, []
    for name, value in state.items():
        layer = layer_re.fullmatch(name)
        if name == ONMT_WORD_TABLE:
            emb[EOLE_WORD_TABLE] = value
        elif name.endswith("make_embedding.pe.pe"):
            continue
        elif same(name):
            out[name] = value
        elif layer and layer.group(2) in layer_names:
            out[f"transformer_layers.{layer.group(1)}.{layer_names[layer.group(2)]}"] = value
        else:
            unknown.append(name)
    if unknown:
        raise KeyError(f"no Eole name for the OpenNMT-py {part} parameters {unknown}")
    return out, emb


#: OpenNMT-py decoder-layer parameter (after ``transformer_layers.{i}.``) -> Eole's (after ``transformer_layers.{i}.``)
DECODER_LAYER_NAMES = {
    "layer_norm_1.weight": "input_layernorm.weight",
    "layer_norm_1.bias": "input_layernorm.bias",
    "layer_norm_2.weight": "precontext_layernorm.weight",
    "layer_norm_2.bias": "precontext_layernorm.bias",
    **{f"{attn}.{proj}.{p}": f"{attn}.{proj}.{p}" for attn in ("self_attn", "context_attn")
       for proj in ("linear_keys", "linear_values", "linear_query", "final_linear") for p in ("weight", "bias")},
    **{k: v for k, v in LAYER_NAMES.items() if k.startswith("feed_forward.")},
    # decoder reordering embeddings (Chen et al. 2019, Eq. 6): the positional penalty PP^n of each layer
    "penalty.W.weight": "penalty.W.weight",
    "penalty.W_tilde.weight": "penalty.W_tilde.weight",
    "penalty.V.weight": "penalty.V.weight",
}
#: Eole decoder-layer buffer with no OpenNMT-py counterpart: Gemma 4's per-layer scalar, 1 for every other model (left
#: at Eole's initial value when an OpenNMT-py decoder is loaded)
EOLE_ONLY_DECODER = "layer_scalar"
_DECODER_LAYER = re.compile(r"transformer_layers\.(\d+)\.(.+)")


def onmt_decoder_to_eole(state: Dict[str, object]) -> Tuple[Dict[str, object], Dict[str, object]]:
    """``(decoder state, tgt_emb state)`` for Eole from an OpenNMT-py decoder's ``state_dict()``. OpenNMT's PE buffer
    is dropped (Eole's ``tgt_emb`` computes the same table); Eole's ``transformer_layers.{i}.layer_scalar`` buffers have
    no source (:data:`EOLE_ONLY_DECODER`). Unknown names raise ``KeyError`` naming them."""
    return _rename(state, "decoder", _DECODER_LAYER, DECODER_LAYER_NAMES,
                   lambda name: name in ("layer_norm.weight", "layer_norm.bias"))
