import uuid

import pytest

from diffutil import Pair, h5py

S3_BUCKET = "h5lake-tests"


@pytest.fixture(scope="session")
def s3_bucket():
    """A local S3 server (moto, run by s3server.py) with one bucket, and
    this process's AWS_* environment pointed at it; yields the bucket name.
    Fails (never skips) without moto, saying how to install it."""
    from s3server import S3Server

    server = S3Server(buckets=[S3_BUCKET])
    mp = pytest.MonkeyPatch()
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT", "AWS_SESSION_TOKEN", "AWS_SKIP_SIGNATURE",
                 "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        mp.delenv(name, raising=False)
    mp.setenv("AWS_ENDPOINT_URL", server.endpoint)
    mp.setenv("AWS_ACCESS_KEY_ID", "testing")
    mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    mp.setenv("AWS_REGION", "us-east-1")
    try:
        yield S3_BUCKET
    finally:
        mp.undo()
        server.stop()


@pytest.fixture
def s3_root(s3_bucket):
    """``s3://bucket/<unique>``: a fresh place in the test bucket."""
    return f"s3://{s3_bucket}/{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["local", "s3"])
def pair(request, tmp_path):
    """Differential pair: ``pair.both(op)`` runs ``op(side)`` on h5py and
    h5lake — the h5lake side on a local directory, then on S3."""
    if h5py is None:
        pytest.skip("h5py not installed")
    s3_root = request.getfixturevalue("s3_root") if request.param == "s3" else None
    p = Pair(tmp_path, s3_root=s3_root)
    yield p
    p.close()
