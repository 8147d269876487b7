"""``ferrotorch.optim``: optimizers and learning-rate schedulers (as ``torch.optim``)."""

from ferrotorch.optim.optimizer import Optimizer  # noqa: F401
from ferrotorch.optim.sgd import SGD  # noqa: F401
from ferrotorch.optim.adam import Adam, AdamW  # noqa: F401
from ferrotorch.optim.adamax import Adamax  # noqa: F401
from ferrotorch.optim.nadam import NAdam  # noqa: F401
from ferrotorch.optim.radam import RAdam  # noqa: F401
from ferrotorch.optim.rmsprop import RMSprop  # noqa: F401
from ferrotorch.optim.rprop import Rprop  # noqa: F401
from ferrotorch.optim.asgd import ASGD  # noqa: F401
from ferrotorch.optim.adagrad import Adagrad  # noqa: F401
from ferrotorch.optim.adadelta import Adadelta  # noqa: F401
from ferrotorch.optim.lbfgs import LBFGS  # noqa: F401
from ferrotorch.optim.adafactor import Adafactor  # noqa: F401
from ferrotorch.optim import lr_scheduler  # noqa: F401
from ferrotorch.optim import swa_utils  # noqa: F401
