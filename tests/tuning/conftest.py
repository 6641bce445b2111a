"""The tuning tests' fixtures: the bundled copy kernel and its arguments."""
import numpy as np
import pytest
from tuning_helpers import COPY_PTX, N

import pyhipbench as hb


@pytest.fixture
def copy(device):
    return device.load_module(COPY_PTX).kernel("copy")


@pytest.fixture
def args(device):
    src = device.array(np.arange(N, dtype=np.float32))
    return [src, device.empty_like(src), hb.int64(N)]
