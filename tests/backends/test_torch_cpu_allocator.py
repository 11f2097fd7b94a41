"""The caching CPU allocator the torch backend installs while a sampler runs
(``ppl.backends.torch.cpu_allocator``): blocks come back to the free lists and are handed out
again, aligned, with the values NumPy computes; tensors made under it outlive it; nested scopes
count; the allocator torch had is back after the scope; a bad setting is a clear error."""

import os
import sys

import numpy as np
import pytest

from ppl import ops

pytestmark = [pytest.mark.backends("torch"), pytest.mark.dtypes("float64"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc / g++")]


@pytest.fixture
def cpu_allocator(backend):
    from ppl.backends.torch import cpu_allocator as module
    if module._load() is None:
        pytest.skip("the allocator could not be built here (no C++ compiler)")
    yield module
    while module._depth[0]:
        module.remove()


def test_blocks_are_reused_aligned_and_correct(cpu_allocator):
    import torch
    assert not cpu_allocator.active()
    with ops.backend().sampling_scope():
        assert cpu_allocator.active()
        a = torch.empty(37, dtype=torch.float64)    # 296 bytes: the 320-byte class
        address, before = a.data_ptr(), cpu_allocator.free_bytes()
        del a                                  # back to the free list of its size class
        assert cpu_allocator.free_bytes() == before + 64 + 320    # its header and block
        b = torch.empty(37, dtype=torch.float64)
        assert b.data_ptr() == address and cpu_allocator.free_bytes() == before
        assert all(torch.empty(n).data_ptr() % 64 == 0 for n in (1, 3, 17, 1000, 20000))
        rng = np.random.default_rng(0)
        x, y = rng.standard_normal((5, 7)), rng.standard_normal((7, 3))
        kept = torch.as_tensor(x) @ torch.as_tensor(y) + 1.0   # outlives the scope
        big = torch.ones(100_000)              # 800 kB: the replaced allocator's block
        assert float(big.sum()) == 100_000.0
    assert not cpu_allocator.active()
    np.testing.assert_allclose(kept.numpy(), x @ y + 1.0, rtol=1e-12)
    before = cpu_allocator.free_bytes()
    del kept, b                                # freed after the scope: to the C library
    assert cpu_allocator.free_bytes() == before == 0
    assert float(torch.arange(10.0).sum()) == 45.0


def test_nested_scopes_keep_it_until_the_outer_one_ends(cpu_allocator):
    scope = ops.backend().sampling_scope
    with scope():
        with scope():
            assert cpu_allocator.active()
        assert cpu_allocator.active()
    assert not cpu_allocator.active()


def test_switched_off_and_bad_setting(cpu_allocator, monkeypatch):
    monkeypatch.setenv("PPL_TORCH_CPU_CACHE", "0")
    with ops.backend().sampling_scope():
        assert not cpu_allocator.active()
    monkeypatch.setenv("PPL_TORCH_CPU_CACHE", "yes")
    import torch
    threads = torch.get_num_threads()
    with pytest.raises(ValueError, match="PPL_TORCH_CPU_CACHE must be 0 or 1, got 'yes'"):
        with ops.backend().sampling_scope():
            pass
    assert torch.get_num_threads() == threads and not cpu_allocator.active()   # nothing left
    assert os.environ["PPL_TORCH_CPU_CACHE"] == "yes"   # (monkeypatch restores it)


def test_threads_free_each_others_blocks(cpu_allocator):
    """A tensor made in one thread and freed in another (a chain thread's draws read by the
    main thread) goes to the freeing thread's lists; a thread's lists go with it."""
    import threading

    import torch
    made = []
    with ops.backend().sampling_scope():
        def work():
            for _ in range(200):
                made.append(torch.full((50,), 2.0))
            tmp = [torch.empty(10) for _ in range(100)]
            del tmp

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(float(m.sum()) == 100.0 for m in made)
        made.clear()
        assert float(torch.full((50,), 3.0).sum()) == 150.0
