"""The auxiliary encoder loss (the reordering loss of ExGRE/ReFSR, Chen et al. 2020).

Wraps (OpenNMT-py 3.5.1) ``LossCompute.from_opts`` (to know the model's encoder) and ``LossCompute.forward``:
while training, the encoder's ``reordering_loss`` (a sum over source words) is added to the summed token loss, so
OpenNMT's normalisation (``loss /= normalization``) and gradient accumulation apply to it unchanged; the statistics
(perplexity, accuracy) stay those of translation, and the term is logged every ``-report_every`` batches. A model
whose encoder has no ``reordering_loss`` (every stock one) is trained exactly as stock.
"""

from __future__ import annotations

import weakref

from onmt_xl.opennmt.seams.base import wrapper

LOST = "ExGRE and ReFSR train without their reordering loss"

#: LossCompute -> (its model's encoder, the -report_every of the aux-loss log, the log); the encoder is not a
#: submodule of the loss, so it is kept here rather than on the loss object
_encoders: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class AuxLossLog:
    """Running mean of the auxiliary loss per source word, logged every ``every`` (``-report_every``) batches."""

    def __init__(self, every: int = 100):
        self.every, self.total, self.words, self.batches = every, 0.0, 0, 0

    def add(self, value: float, words: int) -> None:
        from onmt.utils.logging import logger

        self.total, self.words, self.batches = self.total + value, self.words + words, self.batches + 1
        if self.batches % self.every == 0:
            logger.info("reordering loss (lambda * l_j, -xl_reordering_loss) per source word, last %d batches: %.4f",
                        self.every, self.total / max(self.words, 1))
            self.total, self.words = 0.0, 0


def track_encoder(loss_compute, encoder, every: int = 100) -> None:
    """Let ``loss_compute`` add ``encoder``'s auxiliary loss, logged every ``every`` batches."""
    _encoders[loss_compute] = (encoder, AuxLossLog(max(int(every), 1)))


def add_encoder_loss(stock_forward, loss_compute, batch, output, attns, trunc_start=0, trunc_size=None):
    """``LossCompute.forward`` plus the encoder's auxiliary loss (once per batch, training only)."""
    loss, stats = stock_forward(loss_compute, batch, output, attns, trunc_start=trunc_start, trunc_size=trunc_size)
    encoder, log = _encoders.get(loss_compute, (None, None))
    aux = getattr(encoder, "reordering_loss", None)
    if aux is not None and encoder.training and trunc_start == 0 and loss is not None:
        loss = loss + aux
        log.add(aux.item(), int(encoder.similarity[1]))
    return loss, stats


def apply() -> None:
    from onmt.utils.loss import LossCompute

    stock_from_opts, stock_forward = LossCompute.from_opts.__func__, LossCompute.forward

    def from_opts(cls, opt, model, vocab, train=True):
        loss_compute = stock_from_opts(cls, opt, model, vocab, train)
        if train and getattr(model, "encoder", None) is not None:
            track_encoder(loss_compute, model.encoder, getattr(opt, "report_every", 100))
        return loss_compute

    def forward(self, batch, output, attns, trunc_start=0, trunc_size=None):
        return add_encoder_loss(stock_forward, self, batch, output, attns, trunc_start, trunc_size)

    LossCompute.from_opts = classmethod(wrapper(stock_from_opts, from_opts))
    LossCompute.forward = wrapper(stock_forward, forward)
