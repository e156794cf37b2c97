"""Training semantics: the gradients of the ops trained layers use (grads.py), the losses (losses.py), the
optimizers (optim.py) and a tape that runs a .wrt graph forward and backward (tape.py). See README.md."""

from python_ref.train.grads import BACKWARD, backward
from python_ref.train.losses import LOSSES, mean_squared_error, softmax_cross_entropy
from python_ref.train.optim import OPTIMIZERS, SGD, Adam, Optimizer
from python_ref.train.tape import Tape

__all__ = ["BACKWARD", "LOSSES", "OPTIMIZERS", "SGD", "Adam", "Optimizer", "Tape", "backward",
           "mean_squared_error", "softmax_cross_entropy"]
