"""The ending every Eole encoder of ours shares with Eole's ``TransformerEncoder.forward``."""

from __future__ import annotations


def encoder_output(encoder, x, hidden_states):
    """The final layer norm (if the encoder has one) on ``x`` ``(batch, src_len, d_model)``; returns ``(output,
    None)``, or ``(output, None, hidden_states)`` with the last hidden state replaced by the output when the caller
    collects them (a list, or None)."""
    output = encoder.layer_norm(x) if encoder.layer_norm is not None else x
    if hidden_states is None:
        return output, None
    if hidden_states:
        hidden_states[-1] = output
    return output, None, hidden_states
