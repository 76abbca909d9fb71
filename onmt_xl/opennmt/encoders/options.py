"""Model options of onmt_xl's encoders (added to ``onmt_train -h`` by :mod:`onmt_xl.opennmt.seams.options`).

Each encoder family adds its options (its table in :mod:`onmt_xl.core.options_table`, shared with the Eole adapter) and
keeps its checks beside its code, as module-level ``ENCODERS`` (its registered ``-encoder_type`` names),
``add_options(group)`` and ``validate(opt)``; this module
creates the shared option group, runs the checks common to all our encoders and loops over the families
(:data:`onmt_xl.opennmt.encoders.families.FAMILIES`). It imports no family, so families may import it.
"""

from __future__ import annotations

from onmt_xl.core.options_table import option

GROUP_TITLE = "Model-Encoder-XL"
GROUP_HELP = (
    "onmt_xl encoders: -encoder_type xl_inxl | xl_headxl | xl_combination (cross-lingual position "
    "encoding, Ding et al. 2020; needs the xl_position transform); baselines: xl_relative (encoder-only "
    "relative PE, Shaw et al. 2018), xl_disan (Shen et al. 2018), xl_reordering_embedding and xl_additional_pe "
    "(Chen et al. 2019), xl_exgre and xl_refsr (Chen et al. 2020), xl_encoder_free (Tang et al. 2019); "
    "-decoder_type xl_reordering_embedding"
)


def default_xl_heads(heads: int) -> int:
    """HeadXL's τ when ``-xl_heads`` is not given: half of the ``heads`` self-attention heads."""
    return heads // 2


def add_model_options(parser, families) -> None:
    """Add the shared group to ``parser`` and each family's options to it, in the order of ``families``."""
    group = parser.add_argument_group(GROUP_TITLE, GROUP_HELP)
    for family in families:
        add_options = getattr(family, "add_options", None)
        if add_options is not None:
            add_options(group)


def corpora(opt):
    """``{name: {"transforms": [...], ...}}`` from ``opt.data``, which ``onmt_train`` validates only *after*
    the model options (it is still the YAML text then); None when there is none (e.g. translation)."""
    import yaml

    data = getattr(opt, "data", None)
    if isinstance(data, str):
        try:
            data = yaml.safe_load(data)
        except yaml.YAMLError:
            return None  # OpenNMT's own data validation reports it
    if not isinstance(data, dict):
        return None
    default = list(getattr(opt, "transforms", None) or [])
    return {
        name: {**corpus, "transforms": list(corpus.get("transforms") or default)}
        for name, corpus in data.items()
        if isinstance(corpus, dict)
    }


def require_xl_position(opt, message: str, skip=()) -> None:
    """Raise ``ValueError(message.format(name=...))`` for the first corpus of ``opt.data`` (except those
    named in ``skip``) whose transforms do not include ``xl_position``."""
    for name, corpus in (corpora(opt) or {}).items():
        if name not in skip and "xl_position" not in corpus["transforms"]:
            raise ValueError(message.format(name=name))


def check_bounds(opt, *names: str) -> None:
    """Raise ``ValueError`` for the first option of ``names`` whose value in ``opt`` is out of its table's bounds."""
    for name in names:
        error = option(name).bound_error(getattr(opt, name))
        if error:
            raise ValueError(error)


def validate_shared(opt, enc: str) -> None:
    """The checks every onmt_xl encoder needs: OpenNMT's absolute PE on, its relative PE off."""
    if not getattr(opt, "position_encoding", False):
        raise ValueError(
            f"-encoder_type {enc} needs -position_encoding true (the absolute sinusoid PE_abs of Eq. 1; "
            "the stock decoder uses it too)"
        )
    if getattr(opt, "max_relative_positions", 0) != 0:
        raise ValueError(
            f"-encoder_type {enc} needs -max_relative_positions 0 (OpenNMT's option applies to encoder and "
            "decoder; for encoder-only relative PE use -encoder_type xl_relative -xl_enc_max_relative_positions K)"
        )


def validate_model_options(opt, families) -> None:
    """Check our options once the whole model configuration is known; raise ``ValueError`` with the fix."""
    enc = getattr(opt, "encoder_type", None)
    for family in families:
        if enc in family.ENCODERS:
            validate_shared(opt, enc)
            validate = getattr(family, "validate", None)
            if validate is not None:
                validate(opt)
