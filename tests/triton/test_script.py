"""Which scripts a compile worker may import again: those whose top level only defines."""
from __future__ import annotations

import pytest

from pyhipbench.triton._script import top_level_work


@pytest.mark.parametrize("body", [
    '"""A tuning script."""\nimport triton\nfrom triton import language as tl\n',
    "@triton.jit\ndef k(x, BLOCK: tl.constexpr):\n    pass\n",
    "@triton.autotune(configs=[triton.Config({'B': 64}, num_warps=4)], key=['n'])\n@triton.jit\ndef k(x):\n    pass\n",
    "CONFIGS = [triton.Config({'B': b}, num_warps=w) for b in (64, 128) for w in (4, 8)]\nN: int = 4096\n",
    "BLOCK = tl.constexpr(128)\nSIZES = {'small': (64, 64), 'large': tuple(range(4))}\n",
    "class Shapes:\n    M = 128\n    def total(self):\n        return self.M\n",
    "if __name__ == '__main__':\n    tune()\n    print('done')\n",
])
def test_a_top_level_that_only_defines_may_be_imported(tmp_path, body):
    script = tmp_path / "s.py"
    script.write_text(body)
    assert top_level_work(str(script)) is None


@pytest.mark.parametrize("body, work", [
    ("import torch\nx = torch.randn(4096, device='cuda')\n", "line 2 runs at import (x = torch.randn(4096, device='cuda'))"),
    ("DEVICE = triton.runtime.driver.active.get_active_torch_device()\n", "line 1 runs at import (DEVICE = triton."),
    ("tune()\n", "line 1 runs at import (tune())"),
    ("@ht.autotune(CONFIGS, key=['n'], device=dev)\n@triton.jit\ndef k(x):\n    pass\n", "line 3 runs at import"),
    ("for b in (1, 2):\n    pass\n", "line 1 runs at import (for b in (1, 2): pass)"),
    ("if __name__ == '__main__':\n    pass\nelse:\n    tune()\n", "line 1 runs at import"),
    ("def broken(:\n", "it cannot be read (SyntaxError: "),
])
def test_top_level_work_is_named_by_its_line(tmp_path, body, work):
    script = tmp_path / "s.py"
    script.write_text(body)
    assert top_level_work(str(script)).startswith(work)
