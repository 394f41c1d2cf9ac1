import pytest

from diffutil import Pair, h5py


@pytest.fixture
def pair(tmp_path):
    """Differential pair: ``pair.both(op)`` runs ``op(side)`` on h5py and h5lake."""
    if h5py is None:
        pytest.skip("h5py not installed")
    p = Pair(tmp_path)
    yield p
    p.close()
