"""Test setup: quiet TensorFlow, deterministic seeds per test."""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
os.environ.setdefault('TF_NUM_INTEROP_THREADS', '1')  # as the CLI does

import gin  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _clear_gin():
    gin.clear_config()
    yield
    gin.clear_config()
